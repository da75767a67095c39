package dev.duetime.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.protobuf.Timestamp;
import dev.duetime.jobs.v1.AtSchedule;
import dev.duetime.jobs.v1.CreateJobRequest;
import dev.duetime.jobs.v1.CronSchedule;
import dev.duetime.jobs.v1.GetJobRequest;
import dev.duetime.jobs.v1.HttpTarget;
import dev.duetime.jobs.v1.Job;
import dev.duetime.jobs.v1.JobServiceGrpc;
import dev.duetime.jobs.v1.JobState;
import dev.duetime.jobs.v1.ListJobsRequest;
import dev.duetime.jobs.v1.ListRunsRequest;
import dev.duetime.jobs.v1.PauseJobRequest;
import dev.duetime.jobs.v1.ResumeJobRequest;
import dev.duetime.jobs.v1.Run;
import dev.duetime.jobs.v1.RunOrigin;
import dev.duetime.jobs.v1.RunState;
import dev.duetime.jobs.v1.Schedule;
import dev.duetime.jobs.v1.Target;
import dev.duetime.jobs.v1.TriggerJobRequest;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Drives a live API: DUETIME_API (host:port), DUETIME_TOKEN (a team token) and
 * DUETIME_TARGET_URL (an HTTP endpoint the workers may call); over TLS verified with
 * DUETIME_TLS_CA_FILE unless DUETIME_PLAINTEXT names grpc. Run with {@code mvn test}.
 */
class JobApiTest {
  private static String env(String name) {
    String value = System.getenv(name);
    assertNotNull(value, name + " is not set (the API address, token and target URL come from the environment)");
    return value;
  }

  private static Target http(String url) {
    return Target.newBuilder().setHttp(HttpTarget.newBuilder().setUrl(url)).build();
  }

  @Test
  @Timeout(90)
  void drivesTheJobApi() throws Exception {
    // docs:begin java-dial
    ManagedChannel channel =
        Duetime.connect(env("DUETIME_API"), env("DUETIME_TOKEN"), Duetime.Transport.fromEnv());
    // docs:end java-dial
    try {
      String url = env("DUETIME_TARGET_URL");
      String suffix = Long.toString(System.nanoTime());
      JobServiceGrpc.JobServiceBlockingStub jobs =
          JobServiceGrpc.newBlockingStub(channel).withDeadlineAfter(90, TimeUnit.SECONDS);

      // docs:begin java-create
      Job cron =
          jobs.createJob(
                  CreateJobRequest.newBuilder()
                      .setRequestId("java-cron-" + suffix) // a retry with the same id returns the same job
                      .setJob(
                          Job.newBuilder()
                              .setDisplayName("java nightly report")
                              .setSchedule(
                                  Schedule.newBuilder()
                                      .setCron(
                                          CronSchedule.newBuilder()
                                              .setExpression("30 2 * * *")
                                              .setTimeZone("Europe/Berlin")))
                              .setTarget(http(url)))
                      .build())
              .getJob();
      // docs:end java-create
      Instant runAt = Instant.now().plus(1, ChronoUnit.HOURS).truncatedTo(ChronoUnit.SECONDS);
      Job at =
          jobs.createJob(
                  CreateJobRequest.newBuilder()
                      .setRequestId("java-at-" + suffix)
                      .setJob(
                          Job.newBuilder()
                              .setDisplayName("java one-off")
                              .setSchedule(
                                  Schedule.newBuilder()
                                      .setAt(
                                          AtSchedule.newBuilder()
                                              .setRunTime(
                                                  Timestamp.newBuilder()
                                                      .setSeconds(runAt.getEpochSecond()))))
                              .setTarget(http(url)))
                      .build())
              .getJob();

      Job gotCron = jobs.getJob(GetJobRequest.newBuilder().setName(cron.getName()).build()).getJob();
      assertEquals(JobState.JOB_STATE_ACTIVE, gotCron.getState());
      assertEquals("30 2 * * *", gotCron.getSchedule().getCron().getExpression());
      assertEquals("Europe/Berlin", gotCron.getSchedule().getCron().getTimeZone());
      Job gotAt = jobs.getJob(GetJobRequest.newBuilder().setName(at.getName()).build()).getJob();
      assertEquals(runAt.getEpochSecond(), gotAt.getNextRunTime().getSeconds());

      ListRunsRequest listRuns = ListRunsRequest.newBuilder().setParent(cron.getName()).build();
      assertEquals(List.of(), jobs.listRuns(listRuns).getRunsList());

      // docs:begin java-trigger
      Run queued =
          jobs.triggerJob(
                  TriggerJobRequest.newBuilder()
                      .setName(cron.getName())
                      .setRequestId("java-trigger-" + suffix)
                      .build())
              .getRun();
      Run run = Duetime.waitForRun(jobs, queued.getName(), Duration.ofSeconds(60));
      // docs:end java-trigger
      assertEquals(RunState.RUN_STATE_SUCCEEDED, run.getState());
      System.out.printf(
          "run %s SUCCEEDED after %d attempt(s), key %s%n",
          run.getRunId(), run.getAttempt(), run.getIdempotencyKey());
      // The list holds the triggered run (and, at 02:30 Berlin time, the scheduled one).
      Run listed =
          jobs.listRuns(listRuns).getRunsList().stream()
              .filter(r -> r.getRunId().equals(run.getRunId()))
              .findFirst()
              .orElseThrow();
      assertEquals(RunOrigin.RUN_ORIGIN_TRIGGER, listed.getOrigin());
      assertEquals(RunState.RUN_STATE_SUCCEEDED, listed.getState());

      // docs:begin java-bad-request
      StatusRuntimeException invalid =
          assertThrows(
              StatusRuntimeException.class,
              () ->
                  jobs.createJob(
                      CreateJobRequest.newBuilder()
                          .setJob(
                              Job.newBuilder()
                                  .setSchedule(
                                      Schedule.newBuilder()
                                          .setCron(
                                              CronSchedule.newBuilder()
                                                  .setExpression("0 25 * * *") // there is no hour 25
                                                  .setTimeZone("UTC")))
                                  .setTarget(http(url)))
                          .build()));
      assertEquals(Status.Code.INVALID_ARGUMENT, invalid.getStatus().getCode());
      Map<String, String> violations = Duetime.fieldViolations(invalid);
      // {job.schedule.cron.expression=...}
      // docs:end java-bad-request
      assertEquals(List.of("job.schedule.cron.expression"), List.copyOf(violations.keySet()));
      System.out.println("bad request: " + violations);

      // docs:begin java-etag
      String stale = gotAt.getEtag();
      jobs.pauseJob(PauseJobRequest.newBuilder().setName(at.getName()).setEtag(stale).build());
      // The pause changed the job, so the etag read before it no longer matches.
      StatusRuntimeException aborted =
          assertThrows(
              StatusRuntimeException.class,
              () ->
                  jobs.resumeJob(
                      ResumeJobRequest.newBuilder().setName(at.getName()).setEtag(stale).build()));
      assertEquals(Status.Code.ABORTED, aborted.getStatus().getCode());
      assertEquals("ETAG_MISMATCH", Duetime.reason(aborted));
      // docs:end java-etag
      System.out.println("stale etag: " + Duetime.reason(aborted));
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /**
   * The client checks the API's certificate: one signed by a CA it was not given (the stack's
   * throwaway CA, checked against the system's roots) fails the handshake, and no call is made.
   */
  @Test
  @Timeout(30)
  void refusesAnApiWhoseCertificateItCannotVerify() throws Exception {
    Duetime.Transport transport = Duetime.Transport.fromEnv();
    assumeTrue(
        !transport.plaintext() && !transport.caFile().isEmpty(),
        "needs an API over TLS whose CA is in DUETIME_TLS_CA_FILE");
    ManagedChannel channel =
        Duetime.connect(env("DUETIME_API"), env("DUETIME_TOKEN"), new Duetime.Transport("", false));
    try {
      JobServiceGrpc.JobServiceBlockingStub jobs =
          JobServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
      StatusRuntimeException refused =
          assertThrows(
              StatusRuntimeException.class,
              () -> jobs.listJobs(ListJobsRequest.getDefaultInstance()));
      assertEquals(Status.Code.UNAVAILABLE, refused.getStatus().getCode());
      assertTrue(handshakeFailed(refused), refused::toString);
      System.out.println("unverified certificate refused: " + refused.getStatus());
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** Whether the TLS handshake is what failed (the error or one of its causes). */
  private static boolean handshakeFailed(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof SSLHandshakeException) {
        return true;
      }
    }
    return false;
  }
}
