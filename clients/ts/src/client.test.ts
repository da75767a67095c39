// Drives a live API: DUETIME_API (host:port), DUETIME_TOKEN (a team token) and
// DUETIME_TARGET_URL (an HTTP endpoint the workers may call); over TLS verified with
// DUETIME_TLS_CA_FILE unless DUETIME_PLAINTEXT names grpc. Run with `npm test`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { JobState } from "../gen/duetime/jobs/v1/job_pb.js";
import { RunOrigin, RunState } from "../gen/duetime/jobs/v1/run_pb.js";
import { code, connect, fieldViolations, reason, transportFromEnv, waitForRun } from "./client.js";

function env(name: string): string {
  const value = process.env[name];
  assert.ok(value, `${name} is not set (the API address, token and target URL come from the environment)`);
  return value;
}

// The error a call fails with; fails the test if it succeeds.
async function failure(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  assert.fail("the call succeeded");
}

test("the Job API from TypeScript", { timeout: 90_000 }, async () => {
  // docs:begin ts-dial
  const { jobs, close } = connect(env("DUETIME_API"), env("DUETIME_TOKEN"), transportFromEnv());
  // docs:end ts-dial
  try {
    const url = env("DUETIME_TARGET_URL");
    const suffix = `${Date.now()}`;

    // docs:begin ts-create
    const { job: cron } = await jobs.createJob({
      requestId: `ts-cron-${suffix}`, // a retry with the same id returns the same job
      job: {
        displayName: "ts nightly report",
        schedule: { kind: { case: "cron", value: { expression: "30 2 * * *", timeZone: "Europe/Berlin" } } },
        target: { kind: { case: "http", value: { url } } },
      },
    });
    // docs:end ts-create
    assert.ok(cron);
    const runAt = new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);
    const { job: at } = await jobs.createJob({
      requestId: `ts-at-${suffix}`,
      job: {
        displayName: "ts one-off",
        schedule: { kind: { case: "at", value: { runTime: timestampFromDate(runAt) } } },
        target: { kind: { case: "http", value: { url } } },
      },
    });
    assert.ok(at);

    const { job: gotCron } = await jobs.getJob({ name: cron.name });
    assert.equal(gotCron?.state, JobState.ACTIVE);
    assert.deepEqual(gotCron?.schedule?.kind.case === "cron" && gotCron.schedule.kind.value.expression, "30 2 * * *");
    const { job: gotAt } = await jobs.getJob({ name: at.name });
    assert.ok(gotAt?.nextRunTime);
    assert.equal(timestampDate(gotAt.nextRunTime).getTime(), runAt.getTime());

    assert.deepEqual((await jobs.listRuns({ parent: cron.name })).runs, []);

    // docs:begin ts-trigger
    const { run: queued } = await jobs.triggerJob({ name: cron.name, requestId: `ts-trigger-${suffix}` });
    const run = await waitForRun(jobs, queued!.name, 60_000);
    // docs:end ts-trigger
    assert.equal(RunState[run.state], RunState[RunState.SUCCEEDED]);
    console.log(`run ${run.runId} SUCCEEDED after ${run.attempt} attempt(s), key ${run.idempotencyKey}`);
    // The list holds the triggered run (and, at 02:30 Berlin time, the scheduled one).
    const { runs } = await jobs.listRuns({ parent: cron.name });
    const listed = runs.find((r) => r.runId === run.runId);
    assert.deepEqual([listed?.origin, listed?.state], [RunOrigin.TRIGGER, RunState.SUCCEEDED]);

    // docs:begin ts-bad-request
    const invalid = await failure(
      jobs.createJob({
        job: {
          // there is no hour 25
          schedule: { kind: { case: "cron", value: { expression: "0 25 * * *", timeZone: "UTC" } } },
          target: { kind: { case: "http", value: { url } } },
        },
      }),
    );
    assert.equal(code(invalid), Code.InvalidArgument);
    const violations = fieldViolations(invalid); // Map { "job.schedule.cron.expression" => "..." }
    // docs:end ts-bad-request
    assert.deepEqual([...violations.keys()], ["job.schedule.cron.expression"]);
    console.log("bad request:", Object.fromEntries(violations));

    // docs:begin ts-etag
    const stale = gotAt.etag;
    await jobs.pauseJob({ name: at.name, etag: stale });
    // The pause changed the job, so the etag read before it no longer matches.
    const aborted = await failure(jobs.resumeJob({ name: at.name, etag: stale }));
    assert.equal(code(aborted), Code.Aborted);
    assert.equal(reason(aborted), "ETAG_MISMATCH");
    // docs:end ts-etag
    console.log("stale etag:", reason(aborted));
  } finally {
    close();
  }
});

// The client checks the API's certificate: one signed by a CA it was not given (the stack's
// throwaway CA, checked against the system's roots) fails the handshake, and no call is made.
test("an API whose certificate cannot be verified is refused", { timeout: 30_000 }, async (t) => {
  const transport = transportFromEnv();
  if (transport.plaintext || !transport.caFile) {
    t.skip("needs an API over TLS whose CA is in DUETIME_TLS_CA_FILE");
    return;
  }
  const systemRoots = { caFile: "", plaintext: false };
  const { jobs, close } = connect(env("DUETIME_API"), env("DUETIME_TOKEN"), systemRoots);
  try {
    const refused = await failure(jobs.listJobs({}));
    // Connect reports Node's verification error ("unable to verify the first certificate").
    assert.match(String(refused), /certificate/);
    console.log("unverified certificate refused:", String(refused));
  } finally {
    close();
  }
});
