// Command tandem trains language models with LoRA by RL (GRPO with PPO and
// off-policy objectives) on the embedded engine or any Tinker-compatible
// service, samples from the results, serves the engine over the Tinker
// protocol, and manages checkpoints. Supervised fine-tuning is the library's
// sft package (see examples/sft); the command does not run SFT jobs.
//
//	tandem train          run the arithmetic GRPO example (or a config file)
//	tandem sample         sample from the base model or a checkpoint
//	tandem serve          host the embedded engine over the Tinker API
//	tandem checkpoints    list | source | download | export
//	tandem pretrain       reproduce the shipped base model from its seed
//	tandem tokenize       encode, decode and render chats with a Hugging Face tokenizer
//	tandem export         write the base model as a Hugging Face Llama folder
//	tandem deploy         validate, register and probe an adapter on an inference server
//	tandem ui             a local dashboard of run folders, live while runs train
//
// Run "tandem <command> -h" for a command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"train", "run an RL job (default: arithmetic GRPO on the embedded engine)", runTrain},
		{"sample", "sample completions from the base model or a checkpoint", runSample},
		{"serve", "host the embedded engine behind the Tinker-compatible API", runServe},
		{"checkpoints", "list, source, download or export checkpoints", runCheckpoints},
		{"pretrain", "reproduce the shipped base model bit for bit from its seed", runPretrain},
		{"tokenize", "encode, decode and render chats with a Hugging Face tokenizer (JSON lines)", runTokenize},
		{"export", "write the base model as a Hugging Face Llama folder (-hf DIR)", runExport},
		{"deploy", "validate, register and probe an adapter on a vLLM, SGLang or tandem server", runDeploy},
		{"ui", "a local web dashboard of run folders (runs, live charts, compare, checkpoints)", runUI},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "tandem:", err)
		}
		os.Exit(exitCode(err))
	}
}

func exitCode(err error) int {
	var u usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &u):
		return 2
	default:
		return 1
	}
}

// usageError marks a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		args = []string{"train"}
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "help" {
		printUsage(stdout)
		return nil
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	printUsage(stderr)
	return usagef("unknown command %q", name)
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: tandem <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nWith no command, tandem runs \"train\" with its defaults.")
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("tandem "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}
