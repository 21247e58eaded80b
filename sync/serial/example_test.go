package serial_test

import (
	"context"
	"fmt"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/sync/serial"
)

// A counter that every call changes in turn: the calls are submitted back
// to back, without waiting, and applied in that order on the queue's
// goroutine, so the counter needs no lock.
func Example() {
	var q serial.Queue
	defer q.Close()
	ctx := context.Background()

	counter := 0
	add := func(n int) func(context.Context) (int, error) {
		return func(context.Context) (int, error) {
			counter += n
			return counter, nil
		}
	}
	first := serial.Submit(&q, ctx, add(1))
	second := serial.Submit(&q, ctx, add(10))
	panicky := serial.Submit(&q, ctx, func(context.Context) (int, error) { panic("bad call") })
	third := serial.Submit(&q, ctx, add(100))

	for _, f := range []*rl.Future[int]{first, second, third} {
		v, err := f.Wait(ctx)
		fmt.Println(v, err)
	}
	_, err := panicky.Wait(ctx)
	fmt.Println(err != nil)
	// Output:
	// 1 <nil>
	// 11 <nil>
	// 111 <nil>
	// true
}
