package dev.duetime.example;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.BadRequest;
import com.google.rpc.ErrorInfo;
import dev.duetime.jobs.v1.GetRunRequest;
import dev.duetime.jobs.v1.JobServiceGrpc;
import dev.duetime.jobs.v1.Run;
import dev.duetime.jobs.v1.RunState;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.TlsChannelCredentials;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.MetadataUtils;
import java.io.File;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * How a Java service calls Duetime's Job API with the code the build generates from proto/
 * (pom.xml): a TLS channel that carries the team token, and reading the error details the API
 * sends. JobApiTest drives a live API with it (see docs/clients.md).
 */
final class Duetime {
  private Duetime() {}

  // docs:begin java-connect
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  /**
   * How a client reaches the API: over TLS, the API's certificate verified with the CA bundle in
   * {@code caFile} (the system's roots when it is ""); without TLS only when {@code plaintext}.
   */
  record Transport(String caFile, boolean plaintext) {
    /**
     * The services' convention: DUETIME_TLS_CA_FILE names the CA bundle, and DUETIME_PLAINTEXT
     * naming grpc (or all) means an API that serves no TLS.
     */
    static Transport fromEnv() {
      String named = System.getenv().getOrDefault("DUETIME_PLAINTEXT", "");
      boolean plaintext =
          Arrays.stream(named.split(","))
              .map(name -> name.trim().toLowerCase(Locale.ROOT))
              .anyMatch(name -> name.equals("grpc") || name.equals("all"));
      return new Transport(System.getenv().getOrDefault("DUETIME_TLS_CA_FILE", ""), plaintext);
    }

    ChannelCredentials credentials() throws IOException {
      if (plaintext) {
        return InsecureChannelCredentials.create();
      }
      if (caFile.isEmpty()) {
        return TlsChannelCredentials.create();
      }
      return TlsChannelCredentials.newBuilder().trustManager(new File(caFile)).build();
    }
  }

  /**
   * A channel to the API at {@code address} ("host:port") whose every call carries {@code
   * authorization: Bearer <token>}.
   */
  static ManagedChannel connect(String address, String token, Transport transport)
      throws IOException {
    Metadata headers = new Metadata();
    headers.put(AUTHORIZATION, "Bearer " + token);
    return Grpc.newChannelBuilder(address, transport.credentials())
        .intercept(MetadataUtils.newAttachHeadersInterceptor(headers))
        .build();
  }
  // docs:end java-connect

  // docs:begin java-errors
  /** The bad fields of an INVALID_ARGUMENT error (google.rpc.BadRequest), path to description. */
  static Map<String, String> fieldViolations(Throwable error) throws InvalidProtocolBufferException {
    Map<String, String> fields = new LinkedHashMap<>();
    for (Any detail : StatusProto.fromThrowable(error).getDetailsList()) {
      if (detail.is(BadRequest.class)) {
        for (BadRequest.FieldViolation v : detail.unpack(BadRequest.class).getFieldViolationsList()) {
          fields.put(v.getField(), v.getDescription());
        }
      }
    }
    return fields;
  }

  /** The google.rpc.ErrorInfo reason of an error (e.g. ETAG_MISMATCH), or "". */
  static String reason(Throwable error) throws InvalidProtocolBufferException {
    for (Any detail : StatusProto.fromThrowable(error).getDetailsList()) {
      if (detail.is(ErrorInfo.class)) {
        ErrorInfo info = detail.unpack(ErrorInfo.class);
        if (info.getDomain().equals("duetime.dev")) {
          return info.getReason();
        }
      }
    }
    return "";
  }
  // docs:end java-errors

  private static final Set<RunState> FINAL =
      Set.of(
          RunState.RUN_STATE_SUCCEEDED,
          RunState.RUN_STATE_DEAD_LETTERED,
          RunState.RUN_STATE_MISSED,
          RunState.RUN_STATE_SKIPPED,
          RunState.RUN_STATE_CANCELLED);

  // docs:begin java-wait
  /** Polls a run until it reaches a final state; throws once {@code timeout} has passed. */
  static Run waitForRun(JobServiceGrpc.JobServiceBlockingStub jobs, String name, Duration timeout)
      throws InterruptedException {
    Instant deadline = Instant.now().plus(timeout);
    while (true) {
      Run run = jobs.getRun(GetRunRequest.newBuilder().setName(name).build()).getRun();
      if (FINAL.contains(run.getState())) {
        return run;
      }
      if (Instant.now().isAfter(deadline)) {
        throw new AssertionError("run " + name + " still " + run.getState() + " after " + timeout);
      }
      Thread.sleep(200);
    }
  }
  // docs:end java-wait
}
