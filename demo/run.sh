#!/usr/bin/env bash
# Switchyard demo: builds the gateway and the mock upstream, starts five
# mock providers and the gateway (demo/demo.yaml) on 127.0.0.1, prints curl
# commands that show each kind of rule, then waits. Ctrl-C stops everything.
#
# Needs go and curl; no network beyond 127.0.0.1 (the Go module cache must
# hold the dependencies, as after any earlier build of this repository).
#
# Environment (all optional):
#   DEMO_LISTEN                 gateway address       (default 127.0.0.1:8080)
#   DEMO_ADMIN_LISTEN           operator's console    (default 127.0.0.1:9090)
#   DEMO_OPENAI_PORT            mock "openai"         (default 18101)
#   DEMO_CLAUDE_PRIMARY_PORT    mock "claude-primary" (default 18102)
#   DEMO_CLAUDE_SECONDARY_PORT  mock "claude-secondary" (default 18103)
#   DEMO_EU_PORT                mock "eu"             (default 18104)
#   DEMO_CLOUD_PORT             mock Azure/Vertex/Gemini (default 18105)
#   GO                          go command            (default go)
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
export DEMO_LISTEN=${DEMO_LISTEN:-127.0.0.1:8080}
export DEMO_ADMIN_LISTEN=${DEMO_ADMIN_LISTEN:-127.0.0.1:9090}
export DEMO_OPENAI_PORT=${DEMO_OPENAI_PORT:-18101}
export DEMO_CLAUDE_PRIMARY_PORT=${DEMO_CLAUDE_PRIMARY_PORT:-18102}
export DEMO_CLAUDE_SECONDARY_PORT=${DEMO_CLAUDE_SECONDARY_PORT:-18103}
export DEMO_EU_PORT=${DEMO_EU_PORT:-18104}
export DEMO_CLOUD_PORT=${DEMO_CLOUD_PORT:-18105}

for tool in "$GO" curl; do
	command -v "$tool" >/dev/null || { echo "demo: $tool is required" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-demo.XXXXXX")
pids=()
stopping=0
cleanup() {
	[ "$stopping" = 1 ] && return
	stopping=1
	trap - INT TERM
	if [ "${#pids[@]}" -gt 0 ]; then
		echo
		echo "demo: stopping gateway and mocks"
		kill -TERM "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'cleanup; exit 0' INT TERM

echo "demo: building switchyard and mockupstream"
"$GO" build -o "$work/switchyard" .
"$GO" build -o "$work/mockupstream" ./mock/cmd/mockupstream

# wait_ready URL PID NAME LOG: poll URL until it answers 2xx; fail if PID died.
wait_ready() {
	for _ in $(seq 1 100); do
		if curl -sf -o /dev/null "$1"; then return 0; fi
		if ! kill -0 "$2" 2>/dev/null; then
			echo "demo: $3 exited; its log ($4):" >&2
			cat "$4" >&2 || true
			exit 1
		fi
		sleep 0.1
	done
	echo "demo: $3 did not become ready at $1; its log ($4):" >&2
	cat "$4" >&2 || true
	exit 1
}

# The mocks speak the OpenAI API and accept only the key sk-demo, which
# demo.yaml gives every target.
start_mock() { # name port
	MOCK_API_KEY=sk-demo "$work/mockupstream" -listen "127.0.0.1:$2" -name "$1" \
		-latency 20ms -stream-events 5 -stream-interval 100ms >"$work/$1.log" 2>&1 &
	pids+=($!)
	wait_ready "http://127.0.0.1:$2/_mock/stats" "$!" "mock $1" "$work/$1.log"
}
start_mock openai "$DEMO_OPENAI_PORT"
start_mock claude-primary "$DEMO_CLAUDE_PRIMARY_PORT"
start_mock claude-secondary "$DEMO_CLAUDE_SECONDARY_PORT"
start_mock eu "$DEMO_EU_PORT"

# One mock speaks Azure OpenAI, Vertex AI and Gemini, and issues their
# tokens; it writes the service-account key the vertex target uses.
export DEMO_VERTEX_KEY="$work/vertex-sa.json"
MOCK_ENTRA_SECRET=demo-entra-secret MOCK_GEMINI_KEY=demo-gemini-key \
	"$work/mockupstream" -cloud -listen "127.0.0.1:$DEMO_CLOUD_PORT" -sa-key-out "$DEMO_VERTEX_KEY" \
	>"$work/cloud.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$DEMO_CLOUD_PORT/_mock/stats" "$!" "mock cloud" "$work/cloud.log"
for _ in $(seq 1 100); do [ -s "$DEMO_VERTEX_KEY" ] && break; sleep 0.1; done

# The gateway logs (console format, one access line per request) go to the
# terminal and to a file.
"$work/switchyard" serve -config demo/demo.yaml -listen "$DEMO_LISTEN" \
	> >(tee "$work/gateway.log") 2>&1 &
gw=$!
pids+=("$gw")
G="http://$DEMO_LISTEN"
wait_ready "$G/readyz" "$gw" gateway "$work/gateway.log"
A="http://$DEMO_ADMIN_LISTEN"
wait_ready "$A/api/status" "$gw" "operator's console" "$work/gateway.log"

P=$DEMO_CLAUDE_PRIMARY_PORT
J='-H Content-Type:application/json'
cat <<EOF

Operator's console: $A/   (open it in a browser: the rules, the mocks' health, every decision live)

Switchyard is serving demo/demo.yaml on $G (pid $gw), in front of five mock providers:
  openai :$DEMO_OPENAI_PORT   claude-primary :$DEMO_CLAUDE_PRIMARY_PORT   claude-secondary :$DEMO_CLAUDE_SECONDARY_PORT   eu :$DEMO_EU_PORT
  and one for the cloud providers (Azure OpenAI, Vertex AI, Gemini) :$DEMO_CLOUD_PORT
Watch the X-Gateway-* headers; a body's "system_fingerprint" names the mock that answered.

# 1. Exact-model rule [0]: gpt-4o -> openai
curl -si $G/v1/chat/completions $J -d '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'

# 2. Prefix chain [1]: claude-* -> claude-primary, then claude-secondary
curl -si $G/v1/chat/completions $J -d '{"model":"claude-sonnet-4-6","messages":[{"role":"user","content":"hi"}]}'
#    make the primary fail its next 3 requests with 503 ...
curl -s -XPOST 'http://127.0.0.1:$P/_mock/fail?status=503&count=3'
#    ... and the same request fails over: X-Gateway-Target: claude-secondary, X-Gateway-Attempts: 2,
#    X-Gateway-Model: anthropic.claude-sonnet-4-6 (its model_map)
curl -si $G/v1/chat/completions $J -d '{"model":"claude-sonnet-4-6","messages":[{"role":"user","content":"hi"}]}'
#    (a 400 or other client error from the primary is returned as is, never failed over;
#     curl -s -XPOST http://127.0.0.1:$P/_mock/reset  clears the injected failures)

# 3. User rule [2]: "user":"vip" -> openai (rule 1 still wins for claude-* models: first match)
curl -si $G/v1/chat/completions $J -d '{"model":"gpt-4o-mini","user":"vip","messages":[{"role":"user","content":"hi"}]}'

# 4. Metadata rule [3]: X-Gateway-Metadata tier gold -> eu (serves any model)
curl -si $G/v1/chat/completions $J -H 'X-Gateway-Metadata: {"tier":"gold"}' -d '{"model":"mistral-large","messages":[{"role":"user","content":"hi"}]}'

# 5. No rule matches -> targets[0] (openai) alone, which does not serve it: 404 model_not_found,
#    although eu would serve it (a request never goes where its rule did not send it)
curl -si $G/v1/chat/completions $J -d '{"model":"mistral-large","messages":[{"role":"user","content":"hi"}]}'

# 6. The cloud providers [4]: eu-chat -> Azure OpenAI (Entra ID token), then Claude on Vertex
curl -si $G/v1/chat/completions $J -d '{"model":"eu-chat","messages":[{"role":"user","content":"hi"}]}'
#    make Azure fail: the same request is answered by Claude on Vertex europe-west4 (rawPredict)
curl -s -XPOST 'http://127.0.0.1:$DEMO_CLOUD_PORT/_mock/fail?status=503&count=3'
curl -si $G/v1/chat/completions $J -d '{"model":"eu-chat","messages":[{"role":"user","content":"hi"}]}'
#    the Anthropic Messages API on the same chain (Azure answers it, translated from chat), and Gemini [5]
curl -si $G/v1/messages $J -d '{"model":"eu-chat","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}'
curl -si $G/v1/chat/completions $J -d '{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}'
switchyard explain -config demo/demo.yaml -model eu-chat   # (the binary is in $work)

# 7. The routable models
curl -s $G/v1/models

# Also: a stream, metrics, a reload
curl -sN $G/v1/chat/completions $J -d '{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}'
curl -s $G/metrics | grep ^switchyard_
kill -HUP $gw     # reload demo/demo.yaml after editing it

Ctrl-C stops the gateway and the mocks.
EOF

# Wait until Ctrl-C or until the gateway exits. Ctrl-C reaches the gateway
# and the mocks too (they drain and exit 0 on SIGINT); the EXIT trap then
# stops whatever is left and removes the build directory.
wait "$gw" || true
echo "demo: gateway stopped"
