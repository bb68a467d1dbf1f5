// Command bareproxy runs the baseline proxy of package bench/bareproxy: it
// forwards everything on -listen to -upstream. Its first line on stdout is
// "listening http://ADDR". With -metrics ADDR it also serves the Go runtime
// counters (go_memstats_mallocs_total, ...) in Prometheus text format on
// ADDR/metrics, on a separate listener so the proxied path stays untouched.
// With -pprof ADDR it serves net/http/pprof under ADDR/debug/pprof/, again
// on a listener of its own (the benchmark's Profiles section profiles the
// bare proxy next to Switchyard); without it no such listener exists.
// -reduce-memory turns on fasthttp's ReduceMemoryUsage, for comparing the
// memory of idle connections with Switchyard's server.reduce_memory_usage.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/VictoriaMetrics/metrics"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/bench/bareproxy"
)

func main() {
	log := zerolog.New(os.Stderr).With().Timestamp().Str("component", "bareproxy").Logger()
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "", "upstream host:port (an http:// URL is accepted; its path is ignored)")
	metricsAddr := flag.String("metrics", "", "optional address serving Go runtime metrics on /metrics")
	pprofAddr := flag.String("pprof", "", "optional address serving net/http/pprof on /debug/pprof/ (off unless given)")
	reduceMemory := flag.Bool("reduce-memory", false, "set fasthttp's Server.ReduceMemoryUsage (as Switchyard's server.reduce_memory_usage does)")
	flag.Parse()
	up := strings.TrimPrefix(*upstream, "http://")
	if i := strings.IndexByte(up, '/'); i >= 0 {
		up = up[:i]
	}
	if up == "" {
		log.Fatal().Msg("-upstream is required")
	}

	ln, err := net.Listen("tcp4", *listen)
	if err != nil {
		log.Fatal().Err(err).Str("listen", *listen).Msg("cannot listen")
	}
	srv := bareproxy.NewServer(bareproxy.New(up))
	srv.ReduceMemoryUsage = *reduceMemory
	go func() {
		if err := srv.Serve(ln); err != nil {
			log.Fatal().Err(err).Msg("serve")
		}
	}()
	if *metricsAddr != "" {
		go func() {
			err := fasthttp.ListenAndServe(*metricsAddr, func(ctx *fasthttp.RequestCtx) {
				metrics.WriteProcessMetrics(ctx)
			})
			log.Fatal().Err(err).Str("metrics", *metricsAddr).Msg("metrics listener failed")
		}()
	}
	if *pprofAddr != "" {
		go func() {
			err := http.ListenAndServe(*pprofAddr, pprofMux())
			log.Fatal().Err(err).Str("pprof", *pprofAddr).Msg("pprof listener failed")
		}()
	}
	fmt.Println("listening http://" + ln.Addr().String())
	log.Info().Str("addr", ln.Addr().String()).Str("upstream", up).Msg("bare proxy ready")

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	_ = srv.Shutdown()
}

// pprofMux serves net/http/pprof's handlers on a mux of its own (the
// package also registers them on http.DefaultServeMux, which nothing here
// serves).
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
