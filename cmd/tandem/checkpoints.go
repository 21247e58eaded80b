package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/tandemrl/tandem/checkpoint"
)

const checkpointsUsage = `usage: tandem checkpoints <list|source|download|export> [flags]

  list      list the checkpoints of a store (every run, or -run)
  source    say where a checkpoint can be read from: its folder, or a signed URL
  download  fetch a checkpoint from a signed URL (or copy a folder) into a store
  export    copy a checkpoint's PEFT adapter (what vLLM, SGLang and PEFT load) to a folder

A run's store is <run folder>/checkpoints, e.g. runs/arith-grpo/checkpoints.`

func runCheckpoints(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, checkpointsUsage)
		return usagef("checkpoints: say list, source, download or export")
	}
	switch args[0] {
	case "list":
		return checkpointsList(args[1:], stdout, stderr)
	case "source":
		return checkpointsSource(args[1:], stdout, stderr)
	case "download":
		return checkpointsDownload(ctx, args[1:], stdout, stderr)
	case "export":
		return checkpointsExport(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, checkpointsUsage)
		return nil
	}
	fmt.Fprintln(stderr, checkpointsUsage)
	return usagef("checkpoints: unknown subcommand %q", args[0])
}

func openStore(dir string) (*checkpoint.Store, error) {
	if dir == "" {
		return nil, usagef("-store is required (a run's store is <run folder>/checkpoints)")
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("store %s: %w", dir, err)
	}
	return checkpoint.Open(dir)
}

func checkpointsList(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("checkpoints list", stderr)
	storeDir := fs.String("store", "", "checkpoint store folder")
	run := fs.String("run", "", "only this run")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	st, err := openStore(*storeDir)
	if err != nil {
		return err
	}
	runs := []string{*run}
	if *run == "" {
		if runs, err = st.Runs(); err != nil {
			return err
		}
	}
	var all []checkpoint.Checkpoint
	var listErr error
	for _, r := range runs {
		cks, err := st.List(r)
		all = append(all, cks...)
		if err != nil && listErr == nil {
			listErr = err
		}
	}
	if *asJSON {
		b, _ := json.MarshalIndent(all, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return listErr
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "URI\tVERSION\tSIZE\tCREATED")
	for _, ck := range all {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", ck.URI(), ck.Version, humanBytes(ck.Size()), ck.Created.Local().Format(time.DateTime))
	}
	tw.Flush()
	if len(all) == 0 {
		fmt.Fprintln(stdout, "(no checkpoints)")
	}
	return listErr
}

func checkpointsSource(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("checkpoints source", stderr)
	storeDir := fs.String("store", "", "checkpoint store folder")
	uri := fs.String("uri", "", "checkpoint URI, e.g. tinker://arith-grpo/sampler_weights/final")
	base := fs.String("url-base", "", "answer a signed URL under this base (where `tandem serve` mounts /checkpoints) instead of a folder")
	ttl := fs.Duration("ttl", checkpoint.DefaultTTL, "how long a signed URL stays valid")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	st, err := openStore(*storeDir)
	if err != nil {
		return err
	}
	if *uri == "" {
		return usagef("-uri is required")
	}
	ck, err := st.Resolve(*uri)
	if err != nil {
		return err
	}
	opts := checkpoint.SourceOptions{}
	if *base != "" {
		key := os.Getenv("TANDEM_SIGNING_KEY")
		if key == "" {
			return usagef("a signed URL needs the signing key in TANDEM_SIGNING_KEY (the same one `tandem serve` uses)")
		}
		opts = checkpoint.SourceOptions{Kind: checkpoint.SourceURL, BaseURL: *base, Signer: checkpoint.Signer{Key: []byte(key)}, TTL: *ttl}
	}
	src, err := st.Source(ck, opts)
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(src, "", "  ")
	fmt.Fprintln(stdout, string(b))
	return nil
}

func checkpointsDownload(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("checkpoints download", stderr)
	storeDir := fs.String("store", "", "store to install into (created if missing)")
	url := fs.String("url", "", "signed archive URL (from `tandem checkpoints source -url-base ...`)")
	from := fs.String("from", "", "or: a checkpoint folder to copy")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *storeDir == "" {
		return usagef("-store is required")
	}
	var src checkpoint.Source
	switch {
	case *url != "" && *from == "":
		s, err := checkpoint.SourceFromURL(*url)
		if err != nil {
			return err
		}
		src = s
	case *from != "" && *url == "":
		ck, err := checkpoint.OpenDir(*from)
		if err != nil {
			return err
		}
		src = checkpoint.Source{Kind: checkpoint.SourceVolume, URI: ck.URI().String(), Version: ck.Version, Path: ck.Dir}
	default:
		return usagef("give exactly one of -url and -from")
	}
	ck, err := checkpoint.Download(ctx, src, *storeDir, checkpoint.DownloadOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "installed %s (version %d) at %s\n", ck.URI(), ck.Version, ck.Dir)
	return nil
}

func checkpointsExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("checkpoints export", stderr)
	storeDir := fs.String("store", "", "checkpoint store folder")
	uri := fs.String("uri", "", "checkpoint URI or folder")
	to := fs.String("to", "", "target folder for the PEFT adapter")
	overwrite := fs.Bool("overwrite", false, "replace the target if it exists")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *uri == "" || *to == "" {
		return usagef("-uri and -to are required")
	}
	var ck checkpoint.Checkpoint
	var err error
	if *storeDir != "" {
		st, serr := openStore(*storeDir)
		if serr != nil {
			return serr
		}
		ck, err = st.Resolve(*uri)
	} else {
		ck, err = checkpoint.OpenDir(*uri)
	}
	if err != nil {
		return err
	}
	files, err := checkpoint.Export(ctx, ck, *to, checkpoint.ExportOptions{Overwrite: *overwrite})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "exported %s to %s: %v\n", ck.URI(), *to, files)
	return nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
