//go:build !linux

package upstream

import "net"

// peeker is a no-op off Linux: connections are never found closed or busy
// by a peek (the idle lifetime still applies).
type peeker struct{}

type peekState uint8

const (
	peekNothing peekState = iota
	peekData
	peekClosed
)

func (p *peeker) init(net.Conn) {}

func (p *peeker) state() peekState { return peekNothing }

func (p *peeker) seen() []byte { return nil }
