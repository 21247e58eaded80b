package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"github.com/tandemrl/tandem/train"
)

// setupOTel installs global trace and metric providers when mode asks for
// them: "file" writes JSON lines to <dir>/<name>.otel.jsonl, "otlp" exports
// over OTLP/HTTP configured by the standard OTEL_EXPORTER_OTLP_* variables.
// The library code only uses the OpenTelemetry API; this is the one place an
// exporter is wired. The returned function flushes and shuts down.
// otelHelp is the -otel flag's help: the values setupOTel accepts, and where
// each sends its data.
const otelHelp = "export traces and metrics: file (JSON lines to <dir>/<name>.otel.jsonl) | otlp (OTLP/HTTP, standard OTEL_EXPORTER_OTLP_* variables) | off (the default); env TANDEM_OTEL"

func setupOTel(ctx context.Context, mode string, cfg train.Config) (func(context.Context) error, error) {
	noop := func(context.Context) error { return nil }
	var (
		spans   sdktrace.SpanExporter
		metrics sdkmetric.Exporter
		closers []func() error
		err     error
	)
	switch mode {
	case "", "off":
		return noop, nil
	case "file":
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return nil, err
		}
		path := filepath.Join(cfg.Dir, cfg.Name+".otel.jsonl")
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("otel: %w", err)
		}
		closers = append(closers, f.Close)
		if spans, err = stdouttrace.New(stdouttrace.WithWriter(f)); err != nil {
			return nil, err
		}
		if metrics, err = stdoutmetric.New(stdoutmetric.WithWriter(f)); err != nil {
			return nil, err
		}
	case "otlp":
		if spans, err = otlptracehttp.New(ctx); err != nil {
			return nil, fmt.Errorf("otel: %w", err)
		}
		if metrics, err = otlpmetrichttp.New(ctx); err != nil {
			return nil, fmt.Errorf("otel: %w", err)
		}
	default:
		return nil, usagef("-otel %q unknown; want file, otlp or off", mode)
	}
	res := resource.NewSchemaless(semconv.ServiceName("tandem"), semconv.ServiceInstanceID(cfg.Name))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)), sdkmetric.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	return func(ctx context.Context) error {
		err := errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
		for _, c := range closers {
			err = errors.Join(err, c())
		}
		return err
	}, nil
}
