package checkpoint_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/policy"
)

// writeAdapter stands in for the engine's PEFT writer.
func writeAdapter(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, checkpoint.AdapterConfig), []byte(`{"r": 8}`), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, checkpoint.AdapterSafetensors), []byte("weights"), 0o644)
}

func Example() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "ckpt")
	defer os.RemoveAll(root)
	store, err := checkpoint.Open(root)
	if err != nil {
		log.Fatal(err)
	}
	for v := range policy.Version(3) {
		m := checkpoint.Meta{Run: "arith-grpo", Kind: policy.SamplerWeights, Name: fmt.Sprintf("%06d", v), Version: v, Step: int64(v)}
		if _, err := store.Save(ctx, m, writeAdapter); err != nil {
			log.Fatal(err)
		}
	}
	latest, err := store.Latest("arith-grpo", policy.SamplerWeights)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(latest.URI(), "version", latest.Version)
	fmt.Println(latest.URI().As(checkpoint.SchemeBaseten))
	if err := latest.Verify(ctx); err != nil {
		log.Fatal(err)
	}
	exported, err := checkpoint.Export(ctx, latest, filepath.Join(root, "export", "v2"), checkpoint.ExportOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(exported)
	// Output:
	// tinker://arith-grpo/sampler_weights/000002 version 2
	// bt://loops:arith-grpo/sampler_weights/000002
	// [adapter_config.json adapter_model.safetensors]
}

func ExampleStore_Download() {
	ctx := context.Background()
	trainerRoot, _ := os.MkdirTemp("", "trainer")
	samplerRoot, _ := os.MkdirTemp("", "sampler")
	defer os.RemoveAll(trainerRoot)
	defer os.RemoveAll(samplerRoot)

	// The trainer's side: a store, and the handler serving its archives.
	trainer, _ := checkpoint.Open(trainerRoot)
	signer := checkpoint.Signer{Key: []byte("a secret of at least 16 bytes")}
	h, err := checkpoint.NewHandler(trainer, signer, checkpoint.HandlerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/checkpoints/", http.StripPrefix("/checkpoints", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ck, err := trainer.Save(ctx, checkpoint.Meta{Run: "r", Kind: policy.SamplerWeights, Name: "000007", Version: 7}, writeAdapter)
	if err != nil {
		log.Fatal(err)
	}
	src, err := trainer.Source(ck, checkpoint.SourceOptions{Kind: checkpoint.SourceURL, BaseURL: srv.URL + "/checkpoints", Signer: signer, Gzip: true})
	if err != nil {
		log.Fatal(err)
	}

	// The sampler's side: download into its own store.
	sampler, _ := checkpoint.Open(samplerRoot)
	got, err := sampler.Download(ctx, src, checkpoint.DownloadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Ref().URI, got.Version, len(got.Files), "files")
	// Output: tinker://r/sampler_weights/000007 7 2 files
}
