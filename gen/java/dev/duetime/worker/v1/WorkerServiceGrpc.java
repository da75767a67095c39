package dev.duetime.worker.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * The attempt-lease service workers use, served by the schedulers.
 * Every call carries `authorization: Bearer &lt;worker token&gt;` metadata. Calls about an open
 * attempt (CompleteAttempt) carry its fencing token, the attempt number, in the
 * `duetime-attempt` metadata key; a token that is not the run's open attempt is refused with
 * ABORTED (reason STALE_ATTEMPT) and changes nothing.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class WorkerServiceGrpc {

  private WorkerServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "duetime.worker.v1.WorkerService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.duetime.worker.v1.StartAttemptRequest,
      dev.duetime.worker.v1.StartAttemptResponse> getStartAttemptMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "StartAttempt",
      requestType = dev.duetime.worker.v1.StartAttemptRequest.class,
      responseType = dev.duetime.worker.v1.StartAttemptResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.worker.v1.StartAttemptRequest,
      dev.duetime.worker.v1.StartAttemptResponse> getStartAttemptMethod() {
    io.grpc.MethodDescriptor<dev.duetime.worker.v1.StartAttemptRequest, dev.duetime.worker.v1.StartAttemptResponse> getStartAttemptMethod;
    if ((getStartAttemptMethod = WorkerServiceGrpc.getStartAttemptMethod) == null) {
      synchronized (WorkerServiceGrpc.class) {
        if ((getStartAttemptMethod = WorkerServiceGrpc.getStartAttemptMethod) == null) {
          WorkerServiceGrpc.getStartAttemptMethod = getStartAttemptMethod =
              io.grpc.MethodDescriptor.<dev.duetime.worker.v1.StartAttemptRequest, dev.duetime.worker.v1.StartAttemptResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "StartAttempt"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.worker.v1.StartAttemptRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.worker.v1.StartAttemptResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkerServiceMethodDescriptorSupplier("StartAttempt"))
              .build();
        }
      }
    }
    return getStartAttemptMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.worker.v1.HeartbeatRequest,
      dev.duetime.worker.v1.HeartbeatResponse> getHeartbeatMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Heartbeat",
      requestType = dev.duetime.worker.v1.HeartbeatRequest.class,
      responseType = dev.duetime.worker.v1.HeartbeatResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING)
  public static io.grpc.MethodDescriptor<dev.duetime.worker.v1.HeartbeatRequest,
      dev.duetime.worker.v1.HeartbeatResponse> getHeartbeatMethod() {
    io.grpc.MethodDescriptor<dev.duetime.worker.v1.HeartbeatRequest, dev.duetime.worker.v1.HeartbeatResponse> getHeartbeatMethod;
    if ((getHeartbeatMethod = WorkerServiceGrpc.getHeartbeatMethod) == null) {
      synchronized (WorkerServiceGrpc.class) {
        if ((getHeartbeatMethod = WorkerServiceGrpc.getHeartbeatMethod) == null) {
          WorkerServiceGrpc.getHeartbeatMethod = getHeartbeatMethod =
              io.grpc.MethodDescriptor.<dev.duetime.worker.v1.HeartbeatRequest, dev.duetime.worker.v1.HeartbeatResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Heartbeat"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.worker.v1.HeartbeatRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.worker.v1.HeartbeatResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkerServiceMethodDescriptorSupplier("Heartbeat"))
              .build();
        }
      }
    }
    return getHeartbeatMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.worker.v1.CompleteAttemptRequest,
      dev.duetime.worker.v1.CompleteAttemptResponse> getCompleteAttemptMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CompleteAttempt",
      requestType = dev.duetime.worker.v1.CompleteAttemptRequest.class,
      responseType = dev.duetime.worker.v1.CompleteAttemptResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.worker.v1.CompleteAttemptRequest,
      dev.duetime.worker.v1.CompleteAttemptResponse> getCompleteAttemptMethod() {
    io.grpc.MethodDescriptor<dev.duetime.worker.v1.CompleteAttemptRequest, dev.duetime.worker.v1.CompleteAttemptResponse> getCompleteAttemptMethod;
    if ((getCompleteAttemptMethod = WorkerServiceGrpc.getCompleteAttemptMethod) == null) {
      synchronized (WorkerServiceGrpc.class) {
        if ((getCompleteAttemptMethod = WorkerServiceGrpc.getCompleteAttemptMethod) == null) {
          WorkerServiceGrpc.getCompleteAttemptMethod = getCompleteAttemptMethod =
              io.grpc.MethodDescriptor.<dev.duetime.worker.v1.CompleteAttemptRequest, dev.duetime.worker.v1.CompleteAttemptResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CompleteAttempt"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.worker.v1.CompleteAttemptRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.worker.v1.CompleteAttemptResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkerServiceMethodDescriptorSupplier("CompleteAttempt"))
              .build();
        }
      }
    }
    return getCompleteAttemptMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.worker.v1.StartAttemptsRequest,
      dev.duetime.worker.v1.StartAttemptsResponse> getStartAttemptsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "StartAttempts",
      requestType = dev.duetime.worker.v1.StartAttemptsRequest.class,
      responseType = dev.duetime.worker.v1.StartAttemptsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.worker.v1.StartAttemptsRequest,
      dev.duetime.worker.v1.StartAttemptsResponse> getStartAttemptsMethod() {
    io.grpc.MethodDescriptor<dev.duetime.worker.v1.StartAttemptsRequest, dev.duetime.worker.v1.StartAttemptsResponse> getStartAttemptsMethod;
    if ((getStartAttemptsMethod = WorkerServiceGrpc.getStartAttemptsMethod) == null) {
      synchronized (WorkerServiceGrpc.class) {
        if ((getStartAttemptsMethod = WorkerServiceGrpc.getStartAttemptsMethod) == null) {
          WorkerServiceGrpc.getStartAttemptsMethod = getStartAttemptsMethod =
              io.grpc.MethodDescriptor.<dev.duetime.worker.v1.StartAttemptsRequest, dev.duetime.worker.v1.StartAttemptsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "StartAttempts"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.worker.v1.StartAttemptsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.worker.v1.StartAttemptsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkerServiceMethodDescriptorSupplier("StartAttempts"))
              .build();
        }
      }
    }
    return getStartAttemptsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.worker.v1.CompleteAttemptsRequest,
      dev.duetime.worker.v1.CompleteAttemptsResponse> getCompleteAttemptsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CompleteAttempts",
      requestType = dev.duetime.worker.v1.CompleteAttemptsRequest.class,
      responseType = dev.duetime.worker.v1.CompleteAttemptsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.worker.v1.CompleteAttemptsRequest,
      dev.duetime.worker.v1.CompleteAttemptsResponse> getCompleteAttemptsMethod() {
    io.grpc.MethodDescriptor<dev.duetime.worker.v1.CompleteAttemptsRequest, dev.duetime.worker.v1.CompleteAttemptsResponse> getCompleteAttemptsMethod;
    if ((getCompleteAttemptsMethod = WorkerServiceGrpc.getCompleteAttemptsMethod) == null) {
      synchronized (WorkerServiceGrpc.class) {
        if ((getCompleteAttemptsMethod = WorkerServiceGrpc.getCompleteAttemptsMethod) == null) {
          WorkerServiceGrpc.getCompleteAttemptsMethod = getCompleteAttemptsMethod =
              io.grpc.MethodDescriptor.<dev.duetime.worker.v1.CompleteAttemptsRequest, dev.duetime.worker.v1.CompleteAttemptsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CompleteAttempts"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.worker.v1.CompleteAttemptsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.worker.v1.CompleteAttemptsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkerServiceMethodDescriptorSupplier("CompleteAttempts"))
              .build();
        }
      }
    }
    return getCompleteAttemptsMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static WorkerServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<WorkerServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<WorkerServiceStub>() {
        @java.lang.Override
        public WorkerServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new WorkerServiceStub(channel, callOptions);
        }
      };
    return WorkerServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static WorkerServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<WorkerServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<WorkerServiceBlockingV2Stub>() {
        @java.lang.Override
        public WorkerServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new WorkerServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return WorkerServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static WorkerServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<WorkerServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<WorkerServiceBlockingStub>() {
        @java.lang.Override
        public WorkerServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new WorkerServiceBlockingStub(channel, callOptions);
        }
      };
    return WorkerServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static WorkerServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<WorkerServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<WorkerServiceFutureStub>() {
        @java.lang.Override
        public WorkerServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new WorkerServiceFutureStub(channel, callOptions);
        }
      };
    return WorkerServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * The attempt-lease service workers use, served by the schedulers.
   * Every call carries `authorization: Bearer &lt;worker token&gt;` metadata. Calls about an open
   * attempt (CompleteAttempt) carry its fencing token, the attempt number, in the
   * `duetime-attempt` metadata key; a token that is not the run's open attempt is refused with
   * ABORTED (reason STALE_ATTEMPT) and changes nothing.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Asks to start an attempt of a QUEUED run that a dispatch message named. Answers STARTED
     * with the attempt number (the fencing token) and the run's frozen definition; TOO_EARLY with
     * the server's clock while the run's effective time has not come (wait on the server's
     * clock, then ask again); or REFUSED (already started elsewhere, skipped, cancelled, missed):
     * drop the message. The same delivery asking again gets the same attempt back, its lease
     * renewed, so a lost answer does not burn an attempt.
     * </pre>
     */
    default void startAttempt(dev.duetime.worker.v1.StartAttemptRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.worker.v1.StartAttemptResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getStartAttemptMethod(), responseObserver);
    }

    /**
     * <pre>
     * One stream per worker for the worker's life. Each request lists all the worker's open
     * attempts and extends their leases; each response answers with a directive per attempt
     * (continue, or cancel). A worker should beat well within the lease (default lease 60 s,
     * beat every 20 s). A worker must enforce the lease itself: counting the granted length
     * (`lease_expire_time - server_time`) on its own clock from when it sent the start or beat
     * that granted it, an attempt not renewed by then is stopped and not reported, because the
     * scheduler closes it as LEASE_EXPIRED and may give the run to another worker.
     * </pre>
     */
    default io.grpc.stub.StreamObserver<dev.duetime.worker.v1.HeartbeatRequest> heartbeat(
        io.grpc.stub.StreamObserver<dev.duetime.worker.v1.HeartbeatResponse> responseObserver) {
      return io.grpc.stub.ServerCalls.asyncUnimplementedStreamingCall(getHeartbeatMethod(), responseObserver);
    }

    /**
     * <pre>
     * Reports how an attempt ended, with its fencing token in `duetime-attempt` metadata. A
     * compare-and-set: only the run's open attempt with that number may write.
     * </pre>
     */
    default void completeAttempt(dev.duetime.worker.v1.CompleteAttemptRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.worker.v1.CompleteAttemptResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCompleteAttemptMethod(), responseObserver);
    }

    /**
     * <pre>
     * StartAttempt for many runs in one call (at most 1,000), answered in the same order: each
     * entry is decided exactly as its own StartAttempt would be (never before the run's effective
     * time by the server's clock; the same delivery gets the same attempt back). A worker uses it
     * when many runs come due at once, e.g. at the top of the hour. An entry that could not be
     * decided (a busy run, an internal error) carries its gRPC status in `error`: ask again.
     * </pre>
     */
    default void startAttempts(dev.duetime.worker.v1.StartAttemptsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.worker.v1.StartAttemptsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getStartAttemptsMethod(), responseObserver);
    }

    /**
     * <pre>
     * CompleteAttempt for many attempts in one call (at most 1,000), answered in the same order.
     * Each report carries its own fencing token (`attempt`) instead of `duetime-attempt`
     * metadata; each is the same compare-and-set, and a refused one (ABORTED STALE_ATTEMPT,
     * INVALID_ARGUMENT) carries its status in `error` without affecting the others.
     * </pre>
     */
    default void completeAttempts(dev.duetime.worker.v1.CompleteAttemptsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.worker.v1.CompleteAttemptsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCompleteAttemptsMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service WorkerService.
   * <pre>
   * The attempt-lease service workers use, served by the schedulers.
   * Every call carries `authorization: Bearer &lt;worker token&gt;` metadata. Calls about an open
   * attempt (CompleteAttempt) carry its fencing token, the attempt number, in the
   * `duetime-attempt` metadata key; a token that is not the run's open attempt is refused with
   * ABORTED (reason STALE_ATTEMPT) and changes nothing.
   * </pre>
   */
  public static abstract class WorkerServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return WorkerServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service WorkerService.
   * <pre>
   * The attempt-lease service workers use, served by the schedulers.
   * Every call carries `authorization: Bearer &lt;worker token&gt;` metadata. Calls about an open
   * attempt (CompleteAttempt) carry its fencing token, the attempt number, in the
   * `duetime-attempt` metadata key; a token that is not the run's open attempt is refused with
   * ABORTED (reason STALE_ATTEMPT) and changes nothing.
   * </pre>
   */
  public static final class WorkerServiceStub
      extends io.grpc.stub.AbstractAsyncStub<WorkerServiceStub> {
    private WorkerServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected WorkerServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new WorkerServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Asks to start an attempt of a QUEUED run that a dispatch message named. Answers STARTED
     * with the attempt number (the fencing token) and the run's frozen definition; TOO_EARLY with
     * the server's clock while the run's effective time has not come (wait on the server's
     * clock, then ask again); or REFUSED (already started elsewhere, skipped, cancelled, missed):
     * drop the message. The same delivery asking again gets the same attempt back, its lease
     * renewed, so a lost answer does not burn an attempt.
     * </pre>
     */
    public void startAttempt(dev.duetime.worker.v1.StartAttemptRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.worker.v1.StartAttemptResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getStartAttemptMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * One stream per worker for the worker's life. Each request lists all the worker's open
     * attempts and extends their leases; each response answers with a directive per attempt
     * (continue, or cancel). A worker should beat well within the lease (default lease 60 s,
     * beat every 20 s). A worker must enforce the lease itself: counting the granted length
     * (`lease_expire_time - server_time`) on its own clock from when it sent the start or beat
     * that granted it, an attempt not renewed by then is stopped and not reported, because the
     * scheduler closes it as LEASE_EXPIRED and may give the run to another worker.
     * </pre>
     */
    public io.grpc.stub.StreamObserver<dev.duetime.worker.v1.HeartbeatRequest> heartbeat(
        io.grpc.stub.StreamObserver<dev.duetime.worker.v1.HeartbeatResponse> responseObserver) {
      return io.grpc.stub.ClientCalls.asyncBidiStreamingCall(
          getChannel().newCall(getHeartbeatMethod(), getCallOptions()), responseObserver);
    }

    /**
     * <pre>
     * Reports how an attempt ended, with its fencing token in `duetime-attempt` metadata. A
     * compare-and-set: only the run's open attempt with that number may write.
     * </pre>
     */
    public void completeAttempt(dev.duetime.worker.v1.CompleteAttemptRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.worker.v1.CompleteAttemptResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCompleteAttemptMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * StartAttempt for many runs in one call (at most 1,000), answered in the same order: each
     * entry is decided exactly as its own StartAttempt would be (never before the run's effective
     * time by the server's clock; the same delivery gets the same attempt back). A worker uses it
     * when many runs come due at once, e.g. at the top of the hour. An entry that could not be
     * decided (a busy run, an internal error) carries its gRPC status in `error`: ask again.
     * </pre>
     */
    public void startAttempts(dev.duetime.worker.v1.StartAttemptsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.worker.v1.StartAttemptsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getStartAttemptsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * CompleteAttempt for many attempts in one call (at most 1,000), answered in the same order.
     * Each report carries its own fencing token (`attempt`) instead of `duetime-attempt`
     * metadata; each is the same compare-and-set, and a refused one (ABORTED STALE_ATTEMPT,
     * INVALID_ARGUMENT) carries its status in `error` without affecting the others.
     * </pre>
     */
    public void completeAttempts(dev.duetime.worker.v1.CompleteAttemptsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.worker.v1.CompleteAttemptsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCompleteAttemptsMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service WorkerService.
   * <pre>
   * The attempt-lease service workers use, served by the schedulers.
   * Every call carries `authorization: Bearer &lt;worker token&gt;` metadata. Calls about an open
   * attempt (CompleteAttempt) carry its fencing token, the attempt number, in the
   * `duetime-attempt` metadata key; a token that is not the run's open attempt is refused with
   * ABORTED (reason STALE_ATTEMPT) and changes nothing.
   * </pre>
   */
  public static final class WorkerServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<WorkerServiceBlockingV2Stub> {
    private WorkerServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected WorkerServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new WorkerServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Asks to start an attempt of a QUEUED run that a dispatch message named. Answers STARTED
     * with the attempt number (the fencing token) and the run's frozen definition; TOO_EARLY with
     * the server's clock while the run's effective time has not come (wait on the server's
     * clock, then ask again); or REFUSED (already started elsewhere, skipped, cancelled, missed):
     * drop the message. The same delivery asking again gets the same attempt back, its lease
     * renewed, so a lost answer does not burn an attempt.
     * </pre>
     */
    public dev.duetime.worker.v1.StartAttemptResponse startAttempt(dev.duetime.worker.v1.StartAttemptRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getStartAttemptMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * One stream per worker for the worker's life. Each request lists all the worker's open
     * attempts and extends their leases; each response answers with a directive per attempt
     * (continue, or cancel). A worker should beat well within the lease (default lease 60 s,
     * beat every 20 s). A worker must enforce the lease itself: counting the granted length
     * (`lease_expire_time - server_time`) on its own clock from when it sent the start or beat
     * that granted it, an attempt not renewed by then is stopped and not reported, because the
     * scheduler closes it as LEASE_EXPIRED and may give the run to another worker.
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<dev.duetime.worker.v1.HeartbeatRequest, dev.duetime.worker.v1.HeartbeatResponse>
        heartbeat() {
      return io.grpc.stub.ClientCalls.blockingBidiStreamingCall(
          getChannel(), getHeartbeatMethod(), getCallOptions());
    }

    /**
     * <pre>
     * Reports how an attempt ended, with its fencing token in `duetime-attempt` metadata. A
     * compare-and-set: only the run's open attempt with that number may write.
     * </pre>
     */
    public dev.duetime.worker.v1.CompleteAttemptResponse completeAttempt(dev.duetime.worker.v1.CompleteAttemptRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCompleteAttemptMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * StartAttempt for many runs in one call (at most 1,000), answered in the same order: each
     * entry is decided exactly as its own StartAttempt would be (never before the run's effective
     * time by the server's clock; the same delivery gets the same attempt back). A worker uses it
     * when many runs come due at once, e.g. at the top of the hour. An entry that could not be
     * decided (a busy run, an internal error) carries its gRPC status in `error`: ask again.
     * </pre>
     */
    public dev.duetime.worker.v1.StartAttemptsResponse startAttempts(dev.duetime.worker.v1.StartAttemptsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getStartAttemptsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * CompleteAttempt for many attempts in one call (at most 1,000), answered in the same order.
     * Each report carries its own fencing token (`attempt`) instead of `duetime-attempt`
     * metadata; each is the same compare-and-set, and a refused one (ABORTED STALE_ATTEMPT,
     * INVALID_ARGUMENT) carries its status in `error` without affecting the others.
     * </pre>
     */
    public dev.duetime.worker.v1.CompleteAttemptsResponse completeAttempts(dev.duetime.worker.v1.CompleteAttemptsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCompleteAttemptsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service WorkerService.
   * <pre>
   * The attempt-lease service workers use, served by the schedulers.
   * Every call carries `authorization: Bearer &lt;worker token&gt;` metadata. Calls about an open
   * attempt (CompleteAttempt) carry its fencing token, the attempt number, in the
   * `duetime-attempt` metadata key; a token that is not the run's open attempt is refused with
   * ABORTED (reason STALE_ATTEMPT) and changes nothing.
   * </pre>
   */
  public static final class WorkerServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<WorkerServiceBlockingStub> {
    private WorkerServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected WorkerServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new WorkerServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Asks to start an attempt of a QUEUED run that a dispatch message named. Answers STARTED
     * with the attempt number (the fencing token) and the run's frozen definition; TOO_EARLY with
     * the server's clock while the run's effective time has not come (wait on the server's
     * clock, then ask again); or REFUSED (already started elsewhere, skipped, cancelled, missed):
     * drop the message. The same delivery asking again gets the same attempt back, its lease
     * renewed, so a lost answer does not burn an attempt.
     * </pre>
     */
    public dev.duetime.worker.v1.StartAttemptResponse startAttempt(dev.duetime.worker.v1.StartAttemptRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getStartAttemptMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reports how an attempt ended, with its fencing token in `duetime-attempt` metadata. A
     * compare-and-set: only the run's open attempt with that number may write.
     * </pre>
     */
    public dev.duetime.worker.v1.CompleteAttemptResponse completeAttempt(dev.duetime.worker.v1.CompleteAttemptRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCompleteAttemptMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * StartAttempt for many runs in one call (at most 1,000), answered in the same order: each
     * entry is decided exactly as its own StartAttempt would be (never before the run's effective
     * time by the server's clock; the same delivery gets the same attempt back). A worker uses it
     * when many runs come due at once, e.g. at the top of the hour. An entry that could not be
     * decided (a busy run, an internal error) carries its gRPC status in `error`: ask again.
     * </pre>
     */
    public dev.duetime.worker.v1.StartAttemptsResponse startAttempts(dev.duetime.worker.v1.StartAttemptsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getStartAttemptsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * CompleteAttempt for many attempts in one call (at most 1,000), answered in the same order.
     * Each report carries its own fencing token (`attempt`) instead of `duetime-attempt`
     * metadata; each is the same compare-and-set, and a refused one (ABORTED STALE_ATTEMPT,
     * INVALID_ARGUMENT) carries its status in `error` without affecting the others.
     * </pre>
     */
    public dev.duetime.worker.v1.CompleteAttemptsResponse completeAttempts(dev.duetime.worker.v1.CompleteAttemptsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCompleteAttemptsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service WorkerService.
   * <pre>
   * The attempt-lease service workers use, served by the schedulers.
   * Every call carries `authorization: Bearer &lt;worker token&gt;` metadata. Calls about an open
   * attempt (CompleteAttempt) carry its fencing token, the attempt number, in the
   * `duetime-attempt` metadata key; a token that is not the run's open attempt is refused with
   * ABORTED (reason STALE_ATTEMPT) and changes nothing.
   * </pre>
   */
  public static final class WorkerServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<WorkerServiceFutureStub> {
    private WorkerServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected WorkerServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new WorkerServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Asks to start an attempt of a QUEUED run that a dispatch message named. Answers STARTED
     * with the attempt number (the fencing token) and the run's frozen definition; TOO_EARLY with
     * the server's clock while the run's effective time has not come (wait on the server's
     * clock, then ask again); or REFUSED (already started elsewhere, skipped, cancelled, missed):
     * drop the message. The same delivery asking again gets the same attempt back, its lease
     * renewed, so a lost answer does not burn an attempt.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.worker.v1.StartAttemptResponse> startAttempt(
        dev.duetime.worker.v1.StartAttemptRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getStartAttemptMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Reports how an attempt ended, with its fencing token in `duetime-attempt` metadata. A
     * compare-and-set: only the run's open attempt with that number may write.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.worker.v1.CompleteAttemptResponse> completeAttempt(
        dev.duetime.worker.v1.CompleteAttemptRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCompleteAttemptMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * StartAttempt for many runs in one call (at most 1,000), answered in the same order: each
     * entry is decided exactly as its own StartAttempt would be (never before the run's effective
     * time by the server's clock; the same delivery gets the same attempt back). A worker uses it
     * when many runs come due at once, e.g. at the top of the hour. An entry that could not be
     * decided (a busy run, an internal error) carries its gRPC status in `error`: ask again.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.worker.v1.StartAttemptsResponse> startAttempts(
        dev.duetime.worker.v1.StartAttemptsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getStartAttemptsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * CompleteAttempt for many attempts in one call (at most 1,000), answered in the same order.
     * Each report carries its own fencing token (`attempt`) instead of `duetime-attempt`
     * metadata; each is the same compare-and-set, and a refused one (ABORTED STALE_ATTEMPT,
     * INVALID_ARGUMENT) carries its status in `error` without affecting the others.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.worker.v1.CompleteAttemptsResponse> completeAttempts(
        dev.duetime.worker.v1.CompleteAttemptsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCompleteAttemptsMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_START_ATTEMPT = 0;
  private static final int METHODID_COMPLETE_ATTEMPT = 1;
  private static final int METHODID_START_ATTEMPTS = 2;
  private static final int METHODID_COMPLETE_ATTEMPTS = 3;
  private static final int METHODID_HEARTBEAT = 4;

  private static final class MethodHandlers<Req, Resp> implements
      io.grpc.stub.ServerCalls.UnaryMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ServerStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ClientStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.BidiStreamingMethod<Req, Resp> {
    private final AsyncService serviceImpl;
    private final int methodId;

    MethodHandlers(AsyncService serviceImpl, int methodId) {
      this.serviceImpl = serviceImpl;
      this.methodId = methodId;
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public void invoke(Req request, io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_START_ATTEMPT:
          serviceImpl.startAttempt((dev.duetime.worker.v1.StartAttemptRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.worker.v1.StartAttemptResponse>) responseObserver);
          break;
        case METHODID_COMPLETE_ATTEMPT:
          serviceImpl.completeAttempt((dev.duetime.worker.v1.CompleteAttemptRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.worker.v1.CompleteAttemptResponse>) responseObserver);
          break;
        case METHODID_START_ATTEMPTS:
          serviceImpl.startAttempts((dev.duetime.worker.v1.StartAttemptsRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.worker.v1.StartAttemptsResponse>) responseObserver);
          break;
        case METHODID_COMPLETE_ATTEMPTS:
          serviceImpl.completeAttempts((dev.duetime.worker.v1.CompleteAttemptsRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.worker.v1.CompleteAttemptsResponse>) responseObserver);
          break;
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_HEARTBEAT:
          return (io.grpc.stub.StreamObserver<Req>) serviceImpl.heartbeat(
              (io.grpc.stub.StreamObserver<dev.duetime.worker.v1.HeartbeatResponse>) responseObserver);
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getStartAttemptMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.worker.v1.StartAttemptRequest,
              dev.duetime.worker.v1.StartAttemptResponse>(
                service, METHODID_START_ATTEMPT)))
        .addMethod(
          getHeartbeatMethod(),
          io.grpc.stub.ServerCalls.asyncBidiStreamingCall(
            new MethodHandlers<
              dev.duetime.worker.v1.HeartbeatRequest,
              dev.duetime.worker.v1.HeartbeatResponse>(
                service, METHODID_HEARTBEAT)))
        .addMethod(
          getCompleteAttemptMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.worker.v1.CompleteAttemptRequest,
              dev.duetime.worker.v1.CompleteAttemptResponse>(
                service, METHODID_COMPLETE_ATTEMPT)))
        .addMethod(
          getStartAttemptsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.worker.v1.StartAttemptsRequest,
              dev.duetime.worker.v1.StartAttemptsResponse>(
                service, METHODID_START_ATTEMPTS)))
        .addMethod(
          getCompleteAttemptsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.worker.v1.CompleteAttemptsRequest,
              dev.duetime.worker.v1.CompleteAttemptsResponse>(
                service, METHODID_COMPLETE_ATTEMPTS)))
        .build();
  }

  private static abstract class WorkerServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    WorkerServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.duetime.worker.v1.WorkerServiceProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("WorkerService");
    }
  }

  private static final class WorkerServiceFileDescriptorSupplier
      extends WorkerServiceBaseDescriptorSupplier {
    WorkerServiceFileDescriptorSupplier() {}
  }

  private static final class WorkerServiceMethodDescriptorSupplier
      extends WorkerServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    WorkerServiceMethodDescriptorSupplier(java.lang.String methodName) {
      this.methodName = methodName;
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.MethodDescriptor getMethodDescriptor() {
      return getServiceDescriptor().findMethodByName(methodName);
    }
  }

  private static volatile io.grpc.ServiceDescriptor serviceDescriptor;

  public static io.grpc.ServiceDescriptor getServiceDescriptor() {
    io.grpc.ServiceDescriptor result = serviceDescriptor;
    if (result == null) {
      synchronized (WorkerServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new WorkerServiceFileDescriptorSupplier())
              .addMethod(getStartAttemptMethod())
              .addMethod(getHeartbeatMethod())
              .addMethod(getCompleteAttemptMethod())
              .addMethod(getStartAttemptsMethod())
              .addMethod(getCompleteAttemptsMethod())
              .build();
        }
      }
    }
    return result;
  }
}
