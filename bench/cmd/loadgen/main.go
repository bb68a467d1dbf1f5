// Command loadgen drives HTTP load with package bench/load and prints
// throughput and latency quantiles, for measuring by hand what benchrun
// measures:
//
//	loadgen -url http://127.0.0.1:8080/v1/chat/completions \
//	        -body '{"model":"bench-model","messages":[{"role":"user","content":"hi"}]}' \
//	        -c 64 -d 10s [-rate 20000] [-stream]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/bench/load"
)

func main() {
	var cfg load.Config
	body := flag.String("body", "", "request body (POST when set); @FILE reads a file")
	flag.StringVar(&cfg.URL, "url", "", "target URL (http://host:port/path)")
	flag.IntVar(&cfg.Connections, "c", 64, "connections")
	flag.DurationVar(&cfg.Duration, "d", 10*time.Second, "duration")
	flag.Int64Var(&cfg.Requests, "n", 0, "stop after this many requests (0: by duration)")
	flag.Float64Var(&cfg.Rate, "rate", 0, "open-loop offered load in requests/s (0: closed loop)")
	flag.BoolVar(&cfg.Stream, "stream", false, "read SSE streams and report time to first event")
	flag.Func("H", "request header \"Name: value\" (repeatable)", func(v string) error {
		k, val, ok := strings.Cut(v, ":")
		if !ok {
			return fmt.Errorf("header %q: want Name: value", v)
		}
		cfg.Headers = append(cfg.Headers, [2]string{strings.TrimSpace(k), strings.TrimSpace(val)})
		return nil
	})
	flag.Parse()
	if *body != "" {
		cfg.Body = []byte(*body)
		if name, ok := strings.CutPrefix(*body, "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			cfg.Body = b
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := load.Run(ctx, cfg)
	if res == nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(res)
	fmt.Println("status counts:", res.Status)
}
