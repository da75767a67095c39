// Package client shows how a Go service calls Duetime's Job API with the code generated into
// gen/ (generate.go): dialling over TLS with a team token, and reading the error details the
// API sends. client_test.go drives a live API with it (see docs/clients.md).
package client

import (
	"context"
	"crypto/tls"
	"os"
	"strings"
	"time"

	// docs:begin go-imports
	// errdetails registers google.rpc.BadRequest and ErrorInfo: without this import a status's
	// details do not decode (Details() gives "proto: not found" errors in their place).
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	// The code generated from proto/ into this module (buf.gen.yaml).
	jobsv1 "example.com/jobsclient/gen/duetime/jobs/v1"
	// docs:end go-imports
)

// docs:begin go-connect

// Transport is how a client reaches the API: over TLS, the API's certificate verified with the
// CA bundle in CAFile (the system's roots when it is ""); without TLS only when Plaintext is set.
type Transport struct {
	CAFile    string
	Plaintext bool
}

// TransportFromEnv follows the services' convention: DUETIME_TLS_CA_FILE names the CA bundle,
// and DUETIME_PLAINTEXT naming grpc (or all) means an API that serves no TLS.
func TransportFromEnv() Transport {
	plaintext := false
	for _, name := range strings.Split(os.Getenv("DUETIME_PLAINTEXT"), ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		plaintext = plaintext || name == "grpc" || name == "all"
	}
	return Transport{CAFile: os.Getenv("DUETIME_TLS_CA_FILE"), Plaintext: plaintext}
}

func (t Transport) credentials() (credentials.TransportCredentials, error) {
	switch {
	case t.Plaintext:
		return insecure.NewCredentials(), nil
	case t.CAFile != "":
		return credentials.NewClientTLSFromFile(t.CAFile, "")
	default:
		return credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12}), nil
	}
}

// bearer puts the team token on every call as `authorization: Bearer <token>` metadata, and
// refuses to send it in clear unless the transport is explicitly plaintext.
type bearer struct {
	token     string
	plaintext bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return !b.plaintext }

// Connect dials the API at address ("host:port") as the team the token belongs to.
func Connect(address, token string, transport Transport) (jobsv1.JobServiceClient, *grpc.ClientConn, error) {
	creds, err := transport.credentials()
	if err != nil {
		return nil, nil, err
	}
	conn, err := grpc.NewClient(address,
		grpc.WithTransportCredentials(creds),
		grpc.WithPerRPCCredentials(bearer{token, transport.Plaintext}))
	if err != nil {
		return nil, nil, err
	}
	return jobsv1.NewJobServiceClient(conn), conn, nil
}

// docs:end go-connect

// docs:begin go-errors

// FieldViolations returns the bad fields of an INVALID_ARGUMENT error (google.rpc.BadRequest),
// field path to description.
func FieldViolations(err error) map[string]string {
	fields := map[string]string{}
	for _, detail := range status.Convert(err).Details() {
		if bad, ok := detail.(*errdetails.BadRequest); ok {
			for _, v := range bad.GetFieldViolations() {
				fields[v.GetField()] = v.GetDescription()
			}
		}
	}
	return fields
}

// Reason returns the google.rpc.ErrorInfo reason of an error (e.g. ETAG_MISMATCH), or "".
func Reason(err error) string {
	for _, detail := range status.Convert(err).Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok && info.GetDomain() == "duetime.dev" {
			return info.GetReason()
		}
	}
	return ""
}

// docs:end go-errors

// docs:begin go-wait

// WaitForRun polls a run until it reaches a final state or the context ends.
func WaitForRun(ctx context.Context, jobs jobsv1.JobServiceClient, name string) (*jobsv1.Run, error) {
	for {
		got, err := jobs.GetRun(ctx, &jobsv1.GetRunRequest{Name: name})
		if err != nil {
			return nil, err
		}
		switch got.GetRun().GetState() {
		case jobsv1.RunState_RUN_STATE_SUCCEEDED, jobsv1.RunState_RUN_STATE_DEAD_LETTERED,
			jobsv1.RunState_RUN_STATE_MISSED, jobsv1.RunState_RUN_STATE_SKIPPED,
			jobsv1.RunState_RUN_STATE_CANCELLED:
			return got.GetRun(), nil
		}
		select {
		case <-ctx.Done():
			return got.GetRun(), ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// docs:end go-wait
