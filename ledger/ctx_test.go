package ledger

import "context"

func errContext() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx.Err()
}
