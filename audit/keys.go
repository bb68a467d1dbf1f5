package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

// Keys are written as standard base64: a private key as its 32-byte seed,
// a public key as its 32 bytes (docs/residency.md).

// GenerateKey returns a fresh key pair as text: the private key (the
// audit.signing_key value) and the public key (for audit verify -pub).
func GenerateKey() (private, public string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	return base64.StdEncoding.EncodeToString(priv.Seed()), base64.StdEncoding.EncodeToString(pub), nil
}

// ParsePrivateKey parses a private key written by GenerateKey (the 32-byte
// seed; the 64-byte seed+public form is accepted too). The error never
// repeats the text.
func ParsePrivateKey(s string) (ed25519.PrivateKey, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("not base64; want the private key switchyard audit keygen prints")
	}
	switch len(b) {
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(b), nil
	case ed25519.PrivateKeySize:
		k := ed25519.NewKeyFromSeed(b[:ed25519.SeedSize])
		if !k.Public().(ed25519.PublicKey).Equal(ed25519.PublicKey(b[ed25519.SeedSize:])) {
			return nil, fmt.Errorf("the 64-byte key's public half does not match its seed")
		}
		return k, nil
	}
	return nil, fmt.Errorf("%d bytes after base64; want the 32-byte key switchyard audit keygen prints", len(b))
}

// ParsePublicKey parses a public key written by GenerateKey.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("public key is not base64; want the public key switchyard audit keygen prints")
	}
	if len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key is %d bytes after base64; want %d", len(b), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}
