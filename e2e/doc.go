// Package e2e holds the black-box end-to-end suite of Switchyard. It has no
// API: its tests run the real gateway in-process through package daemon,
// with the README's worked example as configuration, in front of local
// mock providers on 127.0.0.1 (mock for the OpenAI-compatible
// targets; an Anthropic Messages mock and a Bedrock Converse mock written
// in the tests), and talk to it with the official openai-go client.
//
// The suite shows every routing path and failover class of docs/routing.md from the
// client's side: what the client receives, which upstreams were called,
// with which model id and which credential.
package e2e
