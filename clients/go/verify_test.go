package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"
)

// SignedCalls is what tests/e2e/test_signed_calls.py recorded: calls Duetime made, as the
// target received them, each with the audience and the clock to verify it with.
type SignedCalls struct {
	Secret  string `json:"secret"`
	JWKSURL string `json:"jwks_url"`
	Issuer  string `json:"issuer"`
	Cases   []struct {
		Name       string            `json:"name"`
		Headers    map[string]string `json:"headers"`
		BodyBase64 string            `json:"body_base64"`
		Audience   string            `json:"audience"`
		Later      float64           `json:"later_seconds"`
	} `json:"cases"`
}

// TestSignedCalls prints "CASE <name>: verified" or "CASE <name>: refused: <why>" for each
// recorded call; it is skipped unless DUETIME_SIGNED_CALLS names the file.
func TestSignedCalls(t *testing.T) {
	path := os.Getenv("DUETIME_SIGNED_CALLS")
	if path == "" {
		t.Skip("DUETIME_SIGNED_CALLS is not set")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var calls SignedCalls
	if err := json.Unmarshal(raw, &calls); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range calls.Cases {
		verifier, err := NewCallVerifier(ctx, calls.Secret, calls.JWKSURL, calls.Issuer, c.Audience)
		if err != nil {
			t.Fatal(err)
		}
		headers := http.Header{}
		for name, value := range c.Headers {
			headers.Set(name, value)
		}
		body, err := base64.StdEncoding.DecodeString(c.BodyBase64)
		if err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(time.Duration(c.Later * float64(time.Second)))
		if _, err := verifier.Verify(headers, body, later); err != nil {
			t.Logf("CASE %s: refused: %v", c.Name, err)
		} else {
			t.Logf("CASE %s: verified", c.Name)
		}
	}
}
