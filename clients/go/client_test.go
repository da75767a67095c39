package client

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	jobsv1 "example.com/jobsclient/gen/duetime/jobs/v1"
)

func env(t *testing.T, name string) string {
	value := os.Getenv(name)
	if value == "" {
		t.Fatalf("%s is not set (the API address, team token and target URL come from the environment)", name)
	}
	return value
}

// TestJobAPI drives a live API: DUETIME_API (host:port), DUETIME_TOKEN (a team token) and
// DUETIME_TARGET_URL (an HTTP endpoint the workers may call); over TLS verified with
// DUETIME_TLS_CA_FILE unless DUETIME_PLAINTEXT names grpc.
func TestJobAPI(t *testing.T) {
	// docs:begin go-dial
	jobs, conn, err := Connect(env(t, "DUETIME_API"), env(t, "DUETIME_TOKEN"), TransportFromEnv())
	// docs:end go-dial
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	url := env(t, "DUETIME_TARGET_URL")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	suffix := fmt.Sprint(time.Now().UnixNano())

	// docs:begin go-create
	cron, err := jobs.CreateJob(ctx, &jobsv1.CreateJobRequest{
		RequestId: "go-cron-" + suffix, // a retry with the same id returns the same job
		Job: &jobsv1.Job{
			DisplayName: "go nightly report",
			Schedule: &jobsv1.Schedule{Kind: &jobsv1.Schedule_Cron{Cron: &jobsv1.CronSchedule{
				Expression: "30 2 * * *", TimeZone: "Europe/Berlin",
			}}},
			Target: &jobsv1.Target{Kind: &jobsv1.Target_Http{Http: &jobsv1.HttpTarget{Url: url}}},
		},
	})
	// docs:end go-create
	if err != nil {
		t.Fatalf("CreateJob (cron): %v", err)
	}
	runAt := time.Now().Add(time.Hour).Truncate(time.Second)
	at, err := jobs.CreateJob(ctx, &jobsv1.CreateJobRequest{
		RequestId: "go-at-" + suffix,
		Job: &jobsv1.Job{
			DisplayName: "go one-off",
			Schedule: &jobsv1.Schedule{Kind: &jobsv1.Schedule_At{At: &jobsv1.AtSchedule{
				RunTime: timestamppb.New(runAt),
			}}},
			Target: &jobsv1.Target{Kind: &jobsv1.Target_Http{Http: &jobsv1.HttpTarget{Url: url}}},
		},
	})
	if err != nil {
		t.Fatalf("CreateJob (at): %v", err)
	}

	gotCron, err := jobs.GetJob(ctx, &jobsv1.GetJobRequest{Name: cron.GetJob().GetName()})
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	if c := gotCron.GetJob().GetSchedule().GetCron(); c.GetExpression() != "30 2 * * *" ||
		c.GetTimeZone() != "Europe/Berlin" || gotCron.GetJob().GetState() != jobsv1.JobState_JOB_STATE_ACTIVE {
		t.Fatalf("GetJob returned %v", gotCron.GetJob())
	}
	gotAt, err := jobs.GetJob(ctx, &jobsv1.GetJobRequest{Name: at.GetJob().GetName()})
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	if next := gotAt.GetJob().GetNextRunTime().AsTime(); !next.Equal(runAt) {
		t.Fatalf("the one-off's next run time is %v, want %v", next, runAt)
	}

	runs, err := jobs.ListRuns(ctx, &jobsv1.ListRunsRequest{Parent: cron.GetJob().GetName()})
	if err != nil || len(runs.GetRuns()) != 0 {
		t.Fatalf("ListRuns before any run: %v %v", runs, err)
	}

	// docs:begin go-trigger
	triggered, err := jobs.TriggerJob(ctx, &jobsv1.TriggerJobRequest{
		Name: cron.GetJob().GetName(), RequestId: "go-trigger-" + suffix,
	})
	if err != nil {
		t.Fatalf("TriggerJob: %v", err)
	}
	run, err := WaitForRun(ctx, jobs, triggered.GetRun().GetName())
	// docs:end go-trigger
	if err != nil || run.GetState() != jobsv1.RunState_RUN_STATE_SUCCEEDED {
		t.Fatalf("the triggered run ended as %v (%v)", run, err)
	}
	t.Logf("run %s SUCCEEDED after %d attempt(s), key %s", run.GetRunId(), run.GetAttempt(), run.GetIdempotencyKey())
	// The list holds the triggered run (and, at 02:30 Berlin time, the scheduled one).
	runs, err = jobs.ListRuns(ctx, &jobsv1.ListRunsRequest{Parent: cron.GetJob().GetName()})
	if err != nil {
		t.Fatalf("ListRuns: %v", err)
	}
	listed := false
	for _, r := range runs.GetRuns() {
		listed = listed || (r.GetRunId() == run.GetRunId() &&
			r.GetOrigin() == jobsv1.RunOrigin_RUN_ORIGIN_TRIGGER &&
			r.GetState() == jobsv1.RunState_RUN_STATE_SUCCEEDED)
	}
	if !listed {
		t.Fatalf("ListRuns after the trigger lacks the SUCCEEDED triggered run: %v", runs)
	}

	// docs:begin go-bad-request
	_, err = jobs.CreateJob(ctx, &jobsv1.CreateJobRequest{Job: &jobsv1.Job{
		Schedule: &jobsv1.Schedule{Kind: &jobsv1.Schedule_Cron{Cron: &jobsv1.CronSchedule{
			Expression: "0 25 * * *", TimeZone: "UTC", // there is no hour 25
		}}},
		Target: &jobsv1.Target{Kind: &jobsv1.Target_Http{Http: &jobsv1.HttpTarget{Url: url}}},
	}})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a bad cron expression gave %v", err)
	}
	violations := FieldViolations(err) // {"job.schedule.cron.expression": "..."}
	// docs:end go-bad-request
	if _, ok := violations["job.schedule.cron.expression"]; !ok || len(violations) != 1 {
		t.Fatalf("field violations %v", violations)
	}
	t.Logf("bad request: %v", violations)

	// docs:begin go-etag
	stale := gotAt.GetJob().GetEtag()
	if _, err := jobs.PauseJob(ctx, &jobsv1.PauseJobRequest{Name: at.GetJob().GetName(), Etag: stale}); err != nil {
		t.Fatalf("PauseJob: %v", err)
	}
	// The pause changed the job, so the etag read before it no longer matches.
	_, err = jobs.ResumeJob(ctx, &jobsv1.ResumeJobRequest{Name: at.GetJob().GetName(), Etag: stale})
	if status.Code(err) != codes.Aborted || Reason(err) != "ETAG_MISMATCH" {
		t.Fatalf("a stale etag gave %v (reason %q)", err, Reason(err))
	}
	// docs:end go-etag
	t.Logf("stale etag: %s", Reason(err))
}

// TestUnverifiedAPIIsRefused: the client checks the API's certificate, so one signed by a CA
// the client was not given (here the stack's throwaway CA, checked against the system's roots)
// fails the handshake and no call is made.
func TestUnverifiedAPIIsRefused(t *testing.T) {
	transport := TransportFromEnv()
	if transport.Plaintext || transport.CAFile == "" {
		t.Skip("needs an API over TLS whose CA is in DUETIME_TLS_CA_FILE")
	}
	jobs, conn, err := Connect(env(t, "DUETIME_API"), env(t, "DUETIME_TOKEN"), Transport{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = jobs.ListJobs(ctx, &jobsv1.ListJobsRequest{})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a call to an API whose certificate the client cannot verify gave %v", err)
	}
	t.Logf("unverified certificate refused: %v", err)
}
