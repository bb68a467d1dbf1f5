package quota

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/quota/redistest"
)

// TestRedisTLS: rediss:// with a password works against a redis-server
// that speaks only TLS, verifying the server's certificate against the
// system roots (here a test CA given to a child process through
// SSL_CERT_FILE, so this process's roots stay untouched).
func TestRedisTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := testCerts(t, dir)
	port := redistest.FreePort(t)
	srv := redistest.Start(t, "--tls-port", strconv.Itoa(port), "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", ca, "--tls-auth-clients", "no", "--requirepass", "tls-secret-pw")
	url := "rediss://:tls-secret-pw@127.0.0.1:" + strconv.Itoa(port) + "/0"
	child := func(certFile string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRedisTLSChild$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+certFile, "QUOTA_TLS_URL="+url)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := child(ca)
	if err != nil || !strings.Contains(out, "admitted over TLS") {
		t.Fatalf("rediss:// with the CA trusted: %v\n%s", err, out)
	}
	// An untrusted certificate is a store failure (deny: 503), never a
	// silent plain-text fallback, and the password is in no output.
	out, _ = child(filepath.Join(dir, "missing.pem"))
	if !strings.Contains(out, "refused: unavailable") || strings.Contains(out, "tls-secret-pw") {
		t.Fatalf("rediss:// with an untrusted certificate:\n%s", out)
	}
	_ = srv
}

// TestRedisTLSChild runs in TestRedisTLS's child process.
func TestRedisTLSChild(t *testing.T) {
	url := os.Getenv("QUOTA_TLS_URL")
	if url == "" {
		t.Skip("run by TestRedisTLS")
	}
	// A TLS handshake under the race detector can take longer than the
	// other tests' 100ms; this test is about TLS, not the timeout.
	testRedisTimeout = "3s"
	_, p, logs := redisQuotas(t, url, "  on_store_failure: deny\n", "      limits: {requests_per_minute: 5}")
	res, ok := check(p, "acme")
	switch {
	case ok:
		t.Log("admitted over TLS")
	case res.Unavailable:
		t.Log("refused: unavailable")
	default:
		t.Log("refused")
	}
	t.Log(logs.String())
}

// testCerts writes a CA and a server certificate for 127.0.0.1 signed by it.
func testCerts(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "quota test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	caCert, _ := x509.ParseCertificate(caDER)
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", srvDER), write("server.key", "EC PRIVATE KEY", keyDER)
}
