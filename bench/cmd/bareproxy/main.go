// Command bareproxy runs the baseline proxy of package bench/bareproxy,
// forwarding everything on -listen to -upstream. Its first line on stdout
// is "listening http://ADDR". With -metrics ADDR it serves the Go runtime
// counters on ADDR/metrics and net/http/pprof on ADDR/debug/pprof/, on a
// listener of their own so that the proxied path stays untouched.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // on http.DefaultServeMux, served only on -metrics
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/VictoriaMetrics/metrics"
	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/bench/bareproxy"
)

func main() {
	log := zerolog.New(os.Stderr).With().Timestamp().Str("component", "bareproxy").Logger()
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "", "upstream host:port (an http:// URL is accepted; its path is ignored)")
	metricsAddr := flag.String("metrics", "", "address serving /metrics and /debug/pprof/ (none when empty)")
	reduceMemory := flag.Bool("reduce-memory", false, "set fasthttp's Server.ReduceMemoryUsage (as Switchyard's server.reduce_memory_usage does)")
	flag.Parse()
	up, _, _ := strings.Cut(strings.TrimPrefix(*upstream, "http://"), "/")
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
		http.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { metrics.WriteProcessMetrics(w) })
		go func() {
			err := http.ListenAndServe(*metricsAddr, nil)
			log.Fatal().Err(err).Str("metrics", *metricsAddr).Msg("metrics listener failed")
		}()
	}
	fmt.Println("listening http://" + ln.Addr().String())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	_ = srv.Shutdown()
}
