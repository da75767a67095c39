// Package client shows how a Go service calls Duetime's Job API with the code generated into
// gen/go: dialling with a team token, and reading the error details the API sends.
// client_test.go drives a live API with it (see docs/clients.md).
package client

import (
	"context"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	jobsv1 "duetime.dev/gen/go/duetime/jobs/v1"
)

// docs:begin go-connect

// bearer puts the team token on every call as `authorization: Bearer <token>` metadata.
type bearer string

func (t bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

// RequireTransportSecurity is false only because the tests talk to a local plaintext API;
// in production dial with TLS credentials and return true.
func (bearer) RequireTransportSecurity() bool { return false }

// Connect dials the API at address ("host:port") as the team the token belongs to.
func Connect(address, token string) (jobsv1.JobServiceClient, *grpc.ClientConn, error) {
	conn, err := grpc.NewClient(address,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(bearer(token)))
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
