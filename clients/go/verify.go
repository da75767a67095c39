package client

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	// docs:begin go-verify-imports
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	// docs:end go-verify-imports
)

// docs:begin go-verify

// CallVerifier checks that a call came from Duetime: the Standard Webhooks signature with the
// team's secret, and the ID token with the team's JWKS (fetched, cached and refreshed on an
// unknown kid by keyfunc).
type CallVerifier struct {
	webhook  *standardwebhooks.Webhook
	keys     keyfunc.Keyfunc
	issuer   string
	audience string
}

// NewCallVerifier: secret is the team's `whsec_...` secret, jwksURL
// https://<gateway>/v1/teams/<team>/jwks.json, issuer the `iss` Duetime's workers name
// (DUETIME_SIGNING_ISSUER), audience the job's token_audience (by default its URL without
// query).
func NewCallVerifier(ctx context.Context, secret, jwksURL, issuer, audience string) (*CallVerifier, error) {
	webhook, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, err
	}
	keys, err := keyfunc.NewDefaultCtx(ctx, []string{jwksURL})
	if err != nil {
		return nil, err
	}
	return &CallVerifier{webhook, keys, issuer, audience}, nil
}

// Verify checks one call (its exact body, its headers) as of now; it returns the ID token's
// claims: sub is the job, duetime_run_key the run (also the Idempotency-Key), duetime_attempt
// the attempt.
func (v *CallVerifier) Verify(headers http.Header, body []byte, now time.Time) (jwt.MapClaims, error) {
	if err := v.webhook.Verify(body, headers); err != nil {
		return nil, fmt.Errorf("webhook signature: %w", err)
	}
	token, ok := strings.CutPrefix(headers.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, fmt.Errorf("no ID token")
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, v.keys.Keyfunc,
		jwt.WithValidMethods([]string{"ES256"}),
		jwt.WithIssuer(v.issuer),
		jwt.WithAudience(v.audience),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(30*time.Second), // how far the worker's clock and this one may disagree
		jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return nil, fmt.Errorf("ID token: %w", err)
	}
	return claims, nil
}

// docs:end go-verify
