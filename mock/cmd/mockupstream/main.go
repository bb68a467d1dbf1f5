// Command mockupstream runs the OpenAI-compatible mock upstream of package
// mock on 127.0.0.1. Its first line on stdout is
// "listening http://ADDR" (ADDR is the bound address, useful with port 0).
//
//	mockupstream -listen 127.0.0.1:9001 -name primary -latency 5ms
//	curl -XPOST 'http://127.0.0.1:9001/_mock/fail?status=503'   # start failing
//	curl -XPOST  http://127.0.0.1:9001/_mock/reset               # recover
//	curl         http://127.0.0.1:9001/_mock/stats               # counters
//
// With -cloud it runs mock's Cloud mock instead (Azure OpenAI, Vertex
// AI, Gemini and their token endpoints): keys from MOCK_AZURE_KEY,
// MOCK_GEMINI_KEY and MOCK_ENTRA_SECRET; -sa-key-out writes a fresh
// service-account key whose token_uri is this mock, for a vertex target.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/mock"
)

func main() {
	log := zerolog.New(os.Stderr).With().Timestamp().Str("component", "mockupstream").Logger()
	var o mock.Options
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.StringVar(&o.Name, "name", "mock", "name echoed in X-Mock-Name and system_fingerprint")
	flag.DurationVar(&o.Latency, "latency", 0, "delay before every response (a stream: its first event)")
	flag.IntVar(&o.ResponseBytes, "response-bytes", 64, "completion text length in bytes")
	flag.IntVar(&o.StreamEvents, "stream-events", 20, "chunk events per stream before [DONE]")
	flag.DurationVar(&o.StreamInterval, "stream-interval", 0, "pause between stream events")
	flag.Float64Var(&o.FailRate, "fail-rate", 0, "probability in [0,1] that a request fails")
	flag.IntVar(&o.FailStatus, "fail-status", 503, "status of -fail-rate failures")
	models := flag.String("models", "mock-model", "comma-separated ids listed by GET /v1/models")
	cloud := flag.Bool("cloud", false, "run the Azure/Vertex/Gemini mock with its token endpoints")
	tokenLife := flag.Duration("token-life", time.Hour, "-cloud: lifetime of issued tokens")
	saKeyOut := flag.String("sa-key-out", "", "-cloud: write a service-account key for this mock to this file")
	flag.Parse()
	if *cloud {
		runCloud(log, *listen, *tokenLife, *saKeyOut)
		return
	}
	// The key comes from the environment, not a flag, so it never shows in ps.
	o.APIKey = os.Getenv("MOCK_API_KEY")
	o.Models = strings.Split(*models, ",")
	if o.FailRate < 0 || o.FailRate > 1 {
		log.Fatal().Float64("fail_rate", o.FailRate).Msg("-fail-rate must be in [0,1]")
	}

	s, err := mock.Start(*listen, o)
	if err != nil {
		log.Fatal().Err(err).Str("listen", *listen).Msg("cannot listen")
	}
	fmt.Println("listening http://" + s.Addr())
	log.Info().Str("addr", s.Addr()).Str("name", s.Name()).Msg("mock upstream ready")

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	_ = s.Close()
}

func runCloud(log zerolog.Logger, listen string, tokenLife time.Duration, saKeyOut string) {
	c, err := mock.StartCloud(listen, mock.CloudOptions{AzureKey: os.Getenv("MOCK_AZURE_KEY"),
		GeminiKey: os.Getenv("MOCK_GEMINI_KEY"), ClientSecret: os.Getenv("MOCK_ENTRA_SECRET"), TokenLife: tokenLife})
	if err != nil {
		log.Fatal().Err(err).Str("listen", listen).Msg("cannot listen")
	}
	if saKeyOut != "" {
		// Written whole then renamed: a reader never sees half a key.
		key, err := mock.ServiceAccountKey(c.URL() + "/token")
		if err == nil {
			err = os.WriteFile(saKeyOut+".tmp", key, 0o600)
		}
		if err == nil {
			err = os.Rename(saKeyOut+".tmp", saKeyOut)
		}
		if err != nil {
			log.Fatal().Err(err).Msg("cannot write the service-account key")
		}
	}
	fmt.Println("listening " + c.URL())
	log.Info().Str("url", c.URL()).Msg("mock cloud ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	_ = c.Close()
}
