package dev.duetime.admin.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * Operator commands: teams, their tokens and their quotas.
 * Every call must carry `authorization: Bearer &lt;operator token&gt;` metadata; team and worker
 * tokens are refused with PERMISSION_DENIED. The first operator token is made on the database
 * host with `python -m duetime_infra.admin create-operator-token`. Quota changes take effect
 * within seconds on every service, without a restart. Errors are as in JobService.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class AdminServiceGrpc {

  private AdminServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "duetime.admin.v1.AdminService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.duetime.admin.v1.CreateTeamRequest,
      dev.duetime.admin.v1.CreateTeamResponse> getCreateTeamMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CreateTeam",
      requestType = dev.duetime.admin.v1.CreateTeamRequest.class,
      responseType = dev.duetime.admin.v1.CreateTeamResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.admin.v1.CreateTeamRequest,
      dev.duetime.admin.v1.CreateTeamResponse> getCreateTeamMethod() {
    io.grpc.MethodDescriptor<dev.duetime.admin.v1.CreateTeamRequest, dev.duetime.admin.v1.CreateTeamResponse> getCreateTeamMethod;
    if ((getCreateTeamMethod = AdminServiceGrpc.getCreateTeamMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getCreateTeamMethod = AdminServiceGrpc.getCreateTeamMethod) == null) {
          AdminServiceGrpc.getCreateTeamMethod = getCreateTeamMethod =
              io.grpc.MethodDescriptor.<dev.duetime.admin.v1.CreateTeamRequest, dev.duetime.admin.v1.CreateTeamResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CreateTeam"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.CreateTeamRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.CreateTeamResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("CreateTeam"))
              .build();
        }
      }
    }
    return getCreateTeamMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.admin.v1.GetTeamRequest,
      dev.duetime.admin.v1.GetTeamResponse> getGetTeamMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetTeam",
      requestType = dev.duetime.admin.v1.GetTeamRequest.class,
      responseType = dev.duetime.admin.v1.GetTeamResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.admin.v1.GetTeamRequest,
      dev.duetime.admin.v1.GetTeamResponse> getGetTeamMethod() {
    io.grpc.MethodDescriptor<dev.duetime.admin.v1.GetTeamRequest, dev.duetime.admin.v1.GetTeamResponse> getGetTeamMethod;
    if ((getGetTeamMethod = AdminServiceGrpc.getGetTeamMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getGetTeamMethod = AdminServiceGrpc.getGetTeamMethod) == null) {
          AdminServiceGrpc.getGetTeamMethod = getGetTeamMethod =
              io.grpc.MethodDescriptor.<dev.duetime.admin.v1.GetTeamRequest, dev.duetime.admin.v1.GetTeamResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetTeam"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.GetTeamRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.GetTeamResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("GetTeam"))
              .build();
        }
      }
    }
    return getGetTeamMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.admin.v1.ListTeamsRequest,
      dev.duetime.admin.v1.ListTeamsResponse> getListTeamsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListTeams",
      requestType = dev.duetime.admin.v1.ListTeamsRequest.class,
      responseType = dev.duetime.admin.v1.ListTeamsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.admin.v1.ListTeamsRequest,
      dev.duetime.admin.v1.ListTeamsResponse> getListTeamsMethod() {
    io.grpc.MethodDescriptor<dev.duetime.admin.v1.ListTeamsRequest, dev.duetime.admin.v1.ListTeamsResponse> getListTeamsMethod;
    if ((getListTeamsMethod = AdminServiceGrpc.getListTeamsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getListTeamsMethod = AdminServiceGrpc.getListTeamsMethod) == null) {
          AdminServiceGrpc.getListTeamsMethod = getListTeamsMethod =
              io.grpc.MethodDescriptor.<dev.duetime.admin.v1.ListTeamsRequest, dev.duetime.admin.v1.ListTeamsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListTeams"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.ListTeamsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.ListTeamsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("ListTeams"))
              .build();
        }
      }
    }
    return getListTeamsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.admin.v1.UpdateTeamRequest,
      dev.duetime.admin.v1.UpdateTeamResponse> getUpdateTeamMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "UpdateTeam",
      requestType = dev.duetime.admin.v1.UpdateTeamRequest.class,
      responseType = dev.duetime.admin.v1.UpdateTeamResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.admin.v1.UpdateTeamRequest,
      dev.duetime.admin.v1.UpdateTeamResponse> getUpdateTeamMethod() {
    io.grpc.MethodDescriptor<dev.duetime.admin.v1.UpdateTeamRequest, dev.duetime.admin.v1.UpdateTeamResponse> getUpdateTeamMethod;
    if ((getUpdateTeamMethod = AdminServiceGrpc.getUpdateTeamMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getUpdateTeamMethod = AdminServiceGrpc.getUpdateTeamMethod) == null) {
          AdminServiceGrpc.getUpdateTeamMethod = getUpdateTeamMethod =
              io.grpc.MethodDescriptor.<dev.duetime.admin.v1.UpdateTeamRequest, dev.duetime.admin.v1.UpdateTeamResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "UpdateTeam"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.UpdateTeamRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.UpdateTeamResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("UpdateTeam"))
              .build();
        }
      }
    }
    return getUpdateTeamMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.admin.v1.UpdateTeamQuotaRequest,
      dev.duetime.admin.v1.UpdateTeamQuotaResponse> getUpdateTeamQuotaMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "UpdateTeamQuota",
      requestType = dev.duetime.admin.v1.UpdateTeamQuotaRequest.class,
      responseType = dev.duetime.admin.v1.UpdateTeamQuotaResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.admin.v1.UpdateTeamQuotaRequest,
      dev.duetime.admin.v1.UpdateTeamQuotaResponse> getUpdateTeamQuotaMethod() {
    io.grpc.MethodDescriptor<dev.duetime.admin.v1.UpdateTeamQuotaRequest, dev.duetime.admin.v1.UpdateTeamQuotaResponse> getUpdateTeamQuotaMethod;
    if ((getUpdateTeamQuotaMethod = AdminServiceGrpc.getUpdateTeamQuotaMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getUpdateTeamQuotaMethod = AdminServiceGrpc.getUpdateTeamQuotaMethod) == null) {
          AdminServiceGrpc.getUpdateTeamQuotaMethod = getUpdateTeamQuotaMethod =
              io.grpc.MethodDescriptor.<dev.duetime.admin.v1.UpdateTeamQuotaRequest, dev.duetime.admin.v1.UpdateTeamQuotaResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "UpdateTeamQuota"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.UpdateTeamQuotaRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.UpdateTeamQuotaResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("UpdateTeamQuota"))
              .build();
        }
      }
    }
    return getUpdateTeamQuotaMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.admin.v1.GetQuotaDefaultsRequest,
      dev.duetime.admin.v1.GetQuotaDefaultsResponse> getGetQuotaDefaultsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetQuotaDefaults",
      requestType = dev.duetime.admin.v1.GetQuotaDefaultsRequest.class,
      responseType = dev.duetime.admin.v1.GetQuotaDefaultsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.admin.v1.GetQuotaDefaultsRequest,
      dev.duetime.admin.v1.GetQuotaDefaultsResponse> getGetQuotaDefaultsMethod() {
    io.grpc.MethodDescriptor<dev.duetime.admin.v1.GetQuotaDefaultsRequest, dev.duetime.admin.v1.GetQuotaDefaultsResponse> getGetQuotaDefaultsMethod;
    if ((getGetQuotaDefaultsMethod = AdminServiceGrpc.getGetQuotaDefaultsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getGetQuotaDefaultsMethod = AdminServiceGrpc.getGetQuotaDefaultsMethod) == null) {
          AdminServiceGrpc.getGetQuotaDefaultsMethod = getGetQuotaDefaultsMethod =
              io.grpc.MethodDescriptor.<dev.duetime.admin.v1.GetQuotaDefaultsRequest, dev.duetime.admin.v1.GetQuotaDefaultsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetQuotaDefaults"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.GetQuotaDefaultsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.GetQuotaDefaultsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("GetQuotaDefaults"))
              .build();
        }
      }
    }
    return getGetQuotaDefaultsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.admin.v1.UpdateQuotaDefaultsRequest,
      dev.duetime.admin.v1.UpdateQuotaDefaultsResponse> getUpdateQuotaDefaultsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "UpdateQuotaDefaults",
      requestType = dev.duetime.admin.v1.UpdateQuotaDefaultsRequest.class,
      responseType = dev.duetime.admin.v1.UpdateQuotaDefaultsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.admin.v1.UpdateQuotaDefaultsRequest,
      dev.duetime.admin.v1.UpdateQuotaDefaultsResponse> getUpdateQuotaDefaultsMethod() {
    io.grpc.MethodDescriptor<dev.duetime.admin.v1.UpdateQuotaDefaultsRequest, dev.duetime.admin.v1.UpdateQuotaDefaultsResponse> getUpdateQuotaDefaultsMethod;
    if ((getUpdateQuotaDefaultsMethod = AdminServiceGrpc.getUpdateQuotaDefaultsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getUpdateQuotaDefaultsMethod = AdminServiceGrpc.getUpdateQuotaDefaultsMethod) == null) {
          AdminServiceGrpc.getUpdateQuotaDefaultsMethod = getUpdateQuotaDefaultsMethod =
              io.grpc.MethodDescriptor.<dev.duetime.admin.v1.UpdateQuotaDefaultsRequest, dev.duetime.admin.v1.UpdateQuotaDefaultsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "UpdateQuotaDefaults"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.UpdateQuotaDefaultsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.UpdateQuotaDefaultsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("UpdateQuotaDefaults"))
              .build();
        }
      }
    }
    return getUpdateQuotaDefaultsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.admin.v1.CreateTokenRequest,
      dev.duetime.admin.v1.CreateTokenResponse> getCreateTokenMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CreateToken",
      requestType = dev.duetime.admin.v1.CreateTokenRequest.class,
      responseType = dev.duetime.admin.v1.CreateTokenResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.admin.v1.CreateTokenRequest,
      dev.duetime.admin.v1.CreateTokenResponse> getCreateTokenMethod() {
    io.grpc.MethodDescriptor<dev.duetime.admin.v1.CreateTokenRequest, dev.duetime.admin.v1.CreateTokenResponse> getCreateTokenMethod;
    if ((getCreateTokenMethod = AdminServiceGrpc.getCreateTokenMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getCreateTokenMethod = AdminServiceGrpc.getCreateTokenMethod) == null) {
          AdminServiceGrpc.getCreateTokenMethod = getCreateTokenMethod =
              io.grpc.MethodDescriptor.<dev.duetime.admin.v1.CreateTokenRequest, dev.duetime.admin.v1.CreateTokenResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CreateToken"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.CreateTokenRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.CreateTokenResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("CreateToken"))
              .build();
        }
      }
    }
    return getCreateTokenMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.admin.v1.ListTokensRequest,
      dev.duetime.admin.v1.ListTokensResponse> getListTokensMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListTokens",
      requestType = dev.duetime.admin.v1.ListTokensRequest.class,
      responseType = dev.duetime.admin.v1.ListTokensResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.admin.v1.ListTokensRequest,
      dev.duetime.admin.v1.ListTokensResponse> getListTokensMethod() {
    io.grpc.MethodDescriptor<dev.duetime.admin.v1.ListTokensRequest, dev.duetime.admin.v1.ListTokensResponse> getListTokensMethod;
    if ((getListTokensMethod = AdminServiceGrpc.getListTokensMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getListTokensMethod = AdminServiceGrpc.getListTokensMethod) == null) {
          AdminServiceGrpc.getListTokensMethod = getListTokensMethod =
              io.grpc.MethodDescriptor.<dev.duetime.admin.v1.ListTokensRequest, dev.duetime.admin.v1.ListTokensResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListTokens"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.ListTokensRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.ListTokensResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("ListTokens"))
              .build();
        }
      }
    }
    return getListTokensMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.admin.v1.RevokeTokenRequest,
      dev.duetime.admin.v1.RevokeTokenResponse> getRevokeTokenMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "RevokeToken",
      requestType = dev.duetime.admin.v1.RevokeTokenRequest.class,
      responseType = dev.duetime.admin.v1.RevokeTokenResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.admin.v1.RevokeTokenRequest,
      dev.duetime.admin.v1.RevokeTokenResponse> getRevokeTokenMethod() {
    io.grpc.MethodDescriptor<dev.duetime.admin.v1.RevokeTokenRequest, dev.duetime.admin.v1.RevokeTokenResponse> getRevokeTokenMethod;
    if ((getRevokeTokenMethod = AdminServiceGrpc.getRevokeTokenMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getRevokeTokenMethod = AdminServiceGrpc.getRevokeTokenMethod) == null) {
          AdminServiceGrpc.getRevokeTokenMethod = getRevokeTokenMethod =
              io.grpc.MethodDescriptor.<dev.duetime.admin.v1.RevokeTokenRequest, dev.duetime.admin.v1.RevokeTokenResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "RevokeToken"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.RevokeTokenRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.admin.v1.RevokeTokenResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("RevokeToken"))
              .build();
        }
      }
    }
    return getRevokeTokenMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static AdminServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AdminServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AdminServiceStub>() {
        @java.lang.Override
        public AdminServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AdminServiceStub(channel, callOptions);
        }
      };
    return AdminServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static AdminServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AdminServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AdminServiceBlockingV2Stub>() {
        @java.lang.Override
        public AdminServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AdminServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return AdminServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static AdminServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AdminServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AdminServiceBlockingStub>() {
        @java.lang.Override
        public AdminServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AdminServiceBlockingStub(channel, callOptions);
        }
      };
    return AdminServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static AdminServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AdminServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AdminServiceFutureStub>() {
        @java.lang.Override
        public AdminServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AdminServiceFutureStub(channel, callOptions);
        }
      };
    return AdminServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * Operator commands: teams, their tokens and their quotas.
   * Every call must carry `authorization: Bearer &lt;operator token&gt;` metadata; team and worker
   * tokens are refused with PERMISSION_DENIED. The first operator token is made on the database
   * host with `python -m duetime_infra.admin create-operator-token`. Quota changes take effect
   * within seconds on every service, without a restart. Errors are as in JobService.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Creates a team. ALREADY_EXISTS when the id is taken.
     * </pre>
     */
    default void createTeam(dev.duetime.admin.v1.CreateTeamRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.CreateTeamResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCreateTeamMethod(), responseObserver);
    }

    /**
     * <pre>
     * Returns one team with its quota and usage.
     * </pre>
     */
    default void getTeam(dev.duetime.admin.v1.GetTeamRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.GetTeamResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetTeamMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists the teams in id order.
     * </pre>
     */
    default void listTeams(dev.duetime.admin.v1.ListTeamsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.ListTeamsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListTeamsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Changes a team's `display_name` or `notification_url`.
     * </pre>
     */
    default void updateTeam(dev.duetime.admin.v1.UpdateTeamRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.UpdateTeamResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getUpdateTeamMethod(), responseObserver);
    }

    /**
     * <pre>
     * Sets or resets the limits named in `update_mask` for one team.
     * </pre>
     */
    default void updateTeamQuota(dev.duetime.admin.v1.UpdateTeamQuotaRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.UpdateTeamQuotaResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getUpdateTeamQuotaMethod(), responseObserver);
    }

    /**
     * <pre>
     * Returns the platform's default quota, which applies to every limit a team was not given.
     * </pre>
     */
    default void getQuotaDefaults(dev.duetime.admin.v1.GetQuotaDefaultsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.GetQuotaDefaultsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetQuotaDefaultsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Changes the limits named in `update_mask` of the platform's default quota.
     * </pre>
     */
    default void updateQuotaDefaults(dev.duetime.admin.v1.UpdateQuotaDefaultsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.UpdateQuotaDefaultsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getUpdateQuotaDefaultsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Creates a bearer token; its secret is in the answer only, never stored (a SHA-256 digest
     * is).
     * </pre>
     */
    default void createToken(dev.duetime.admin.v1.CreateTokenRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.CreateTokenResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCreateTokenMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists tokens (never their secrets), newest first.
     * </pre>
     */
    default void listTokens(dev.duetime.admin.v1.ListTokensRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.ListTokensResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListTokensMethod(), responseObserver);
    }

    /**
     * <pre>
     * Revokes a token. Services stop accepting it within 10 seconds (they cache lookups).
     * </pre>
     */
    default void revokeToken(dev.duetime.admin.v1.RevokeTokenRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.RevokeTokenResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRevokeTokenMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service AdminService.
   * <pre>
   * Operator commands: teams, their tokens and their quotas.
   * Every call must carry `authorization: Bearer &lt;operator token&gt;` metadata; team and worker
   * tokens are refused with PERMISSION_DENIED. The first operator token is made on the database
   * host with `python -m duetime_infra.admin create-operator-token`. Quota changes take effect
   * within seconds on every service, without a restart. Errors are as in JobService.
   * </pre>
   */
  public static abstract class AdminServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return AdminServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service AdminService.
   * <pre>
   * Operator commands: teams, their tokens and their quotas.
   * Every call must carry `authorization: Bearer &lt;operator token&gt;` metadata; team and worker
   * tokens are refused with PERMISSION_DENIED. The first operator token is made on the database
   * host with `python -m duetime_infra.admin create-operator-token`. Quota changes take effect
   * within seconds on every service, without a restart. Errors are as in JobService.
   * </pre>
   */
  public static final class AdminServiceStub
      extends io.grpc.stub.AbstractAsyncStub<AdminServiceStub> {
    private AdminServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AdminServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AdminServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates a team. ALREADY_EXISTS when the id is taken.
     * </pre>
     */
    public void createTeam(dev.duetime.admin.v1.CreateTeamRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.CreateTeamResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCreateTeamMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Returns one team with its quota and usage.
     * </pre>
     */
    public void getTeam(dev.duetime.admin.v1.GetTeamRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.GetTeamResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetTeamMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists the teams in id order.
     * </pre>
     */
    public void listTeams(dev.duetime.admin.v1.ListTeamsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.ListTeamsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListTeamsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Changes a team's `display_name` or `notification_url`.
     * </pre>
     */
    public void updateTeam(dev.duetime.admin.v1.UpdateTeamRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.UpdateTeamResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getUpdateTeamMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Sets or resets the limits named in `update_mask` for one team.
     * </pre>
     */
    public void updateTeamQuota(dev.duetime.admin.v1.UpdateTeamQuotaRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.UpdateTeamQuotaResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getUpdateTeamQuotaMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Returns the platform's default quota, which applies to every limit a team was not given.
     * </pre>
     */
    public void getQuotaDefaults(dev.duetime.admin.v1.GetQuotaDefaultsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.GetQuotaDefaultsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetQuotaDefaultsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Changes the limits named in `update_mask` of the platform's default quota.
     * </pre>
     */
    public void updateQuotaDefaults(dev.duetime.admin.v1.UpdateQuotaDefaultsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.UpdateQuotaDefaultsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getUpdateQuotaDefaultsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Creates a bearer token; its secret is in the answer only, never stored (a SHA-256 digest
     * is).
     * </pre>
     */
    public void createToken(dev.duetime.admin.v1.CreateTokenRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.CreateTokenResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCreateTokenMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists tokens (never their secrets), newest first.
     * </pre>
     */
    public void listTokens(dev.duetime.admin.v1.ListTokensRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.ListTokensResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListTokensMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Revokes a token. Services stop accepting it within 10 seconds (they cache lookups).
     * </pre>
     */
    public void revokeToken(dev.duetime.admin.v1.RevokeTokenRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.admin.v1.RevokeTokenResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRevokeTokenMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service AdminService.
   * <pre>
   * Operator commands: teams, their tokens and their quotas.
   * Every call must carry `authorization: Bearer &lt;operator token&gt;` metadata; team and worker
   * tokens are refused with PERMISSION_DENIED. The first operator token is made on the database
   * host with `python -m duetime_infra.admin create-operator-token`. Quota changes take effect
   * within seconds on every service, without a restart. Errors are as in JobService.
   * </pre>
   */
  public static final class AdminServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<AdminServiceBlockingV2Stub> {
    private AdminServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AdminServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AdminServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates a team. ALREADY_EXISTS when the id is taken.
     * </pre>
     */
    public dev.duetime.admin.v1.CreateTeamResponse createTeam(dev.duetime.admin.v1.CreateTeamRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCreateTeamMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns one team with its quota and usage.
     * </pre>
     */
    public dev.duetime.admin.v1.GetTeamResponse getTeam(dev.duetime.admin.v1.GetTeamRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetTeamMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the teams in id order.
     * </pre>
     */
    public dev.duetime.admin.v1.ListTeamsResponse listTeams(dev.duetime.admin.v1.ListTeamsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListTeamsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Changes a team's `display_name` or `notification_url`.
     * </pre>
     */
    public dev.duetime.admin.v1.UpdateTeamResponse updateTeam(dev.duetime.admin.v1.UpdateTeamRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getUpdateTeamMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Sets or resets the limits named in `update_mask` for one team.
     * </pre>
     */
    public dev.duetime.admin.v1.UpdateTeamQuotaResponse updateTeamQuota(dev.duetime.admin.v1.UpdateTeamQuotaRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getUpdateTeamQuotaMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns the platform's default quota, which applies to every limit a team was not given.
     * </pre>
     */
    public dev.duetime.admin.v1.GetQuotaDefaultsResponse getQuotaDefaults(dev.duetime.admin.v1.GetQuotaDefaultsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetQuotaDefaultsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Changes the limits named in `update_mask` of the platform's default quota.
     * </pre>
     */
    public dev.duetime.admin.v1.UpdateQuotaDefaultsResponse updateQuotaDefaults(dev.duetime.admin.v1.UpdateQuotaDefaultsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getUpdateQuotaDefaultsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Creates a bearer token; its secret is in the answer only, never stored (a SHA-256 digest
     * is).
     * </pre>
     */
    public dev.duetime.admin.v1.CreateTokenResponse createToken(dev.duetime.admin.v1.CreateTokenRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCreateTokenMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists tokens (never their secrets), newest first.
     * </pre>
     */
    public dev.duetime.admin.v1.ListTokensResponse listTokens(dev.duetime.admin.v1.ListTokensRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListTokensMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Revokes a token. Services stop accepting it within 10 seconds (they cache lookups).
     * </pre>
     */
    public dev.duetime.admin.v1.RevokeTokenResponse revokeToken(dev.duetime.admin.v1.RevokeTokenRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRevokeTokenMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service AdminService.
   * <pre>
   * Operator commands: teams, their tokens and their quotas.
   * Every call must carry `authorization: Bearer &lt;operator token&gt;` metadata; team and worker
   * tokens are refused with PERMISSION_DENIED. The first operator token is made on the database
   * host with `python -m duetime_infra.admin create-operator-token`. Quota changes take effect
   * within seconds on every service, without a restart. Errors are as in JobService.
   * </pre>
   */
  public static final class AdminServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<AdminServiceBlockingStub> {
    private AdminServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AdminServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AdminServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates a team. ALREADY_EXISTS when the id is taken.
     * </pre>
     */
    public dev.duetime.admin.v1.CreateTeamResponse createTeam(dev.duetime.admin.v1.CreateTeamRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCreateTeamMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns one team with its quota and usage.
     * </pre>
     */
    public dev.duetime.admin.v1.GetTeamResponse getTeam(dev.duetime.admin.v1.GetTeamRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetTeamMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the teams in id order.
     * </pre>
     */
    public dev.duetime.admin.v1.ListTeamsResponse listTeams(dev.duetime.admin.v1.ListTeamsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListTeamsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Changes a team's `display_name` or `notification_url`.
     * </pre>
     */
    public dev.duetime.admin.v1.UpdateTeamResponse updateTeam(dev.duetime.admin.v1.UpdateTeamRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getUpdateTeamMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Sets or resets the limits named in `update_mask` for one team.
     * </pre>
     */
    public dev.duetime.admin.v1.UpdateTeamQuotaResponse updateTeamQuota(dev.duetime.admin.v1.UpdateTeamQuotaRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getUpdateTeamQuotaMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns the platform's default quota, which applies to every limit a team was not given.
     * </pre>
     */
    public dev.duetime.admin.v1.GetQuotaDefaultsResponse getQuotaDefaults(dev.duetime.admin.v1.GetQuotaDefaultsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetQuotaDefaultsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Changes the limits named in `update_mask` of the platform's default quota.
     * </pre>
     */
    public dev.duetime.admin.v1.UpdateQuotaDefaultsResponse updateQuotaDefaults(dev.duetime.admin.v1.UpdateQuotaDefaultsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getUpdateQuotaDefaultsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Creates a bearer token; its secret is in the answer only, never stored (a SHA-256 digest
     * is).
     * </pre>
     */
    public dev.duetime.admin.v1.CreateTokenResponse createToken(dev.duetime.admin.v1.CreateTokenRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCreateTokenMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists tokens (never their secrets), newest first.
     * </pre>
     */
    public dev.duetime.admin.v1.ListTokensResponse listTokens(dev.duetime.admin.v1.ListTokensRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListTokensMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Revokes a token. Services stop accepting it within 10 seconds (they cache lookups).
     * </pre>
     */
    public dev.duetime.admin.v1.RevokeTokenResponse revokeToken(dev.duetime.admin.v1.RevokeTokenRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRevokeTokenMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service AdminService.
   * <pre>
   * Operator commands: teams, their tokens and their quotas.
   * Every call must carry `authorization: Bearer &lt;operator token&gt;` metadata; team and worker
   * tokens are refused with PERMISSION_DENIED. The first operator token is made on the database
   * host with `python -m duetime_infra.admin create-operator-token`. Quota changes take effect
   * within seconds on every service, without a restart. Errors are as in JobService.
   * </pre>
   */
  public static final class AdminServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<AdminServiceFutureStub> {
    private AdminServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AdminServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AdminServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates a team. ALREADY_EXISTS when the id is taken.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.admin.v1.CreateTeamResponse> createTeam(
        dev.duetime.admin.v1.CreateTeamRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCreateTeamMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Returns one team with its quota and usage.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.admin.v1.GetTeamResponse> getTeam(
        dev.duetime.admin.v1.GetTeamRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetTeamMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists the teams in id order.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.admin.v1.ListTeamsResponse> listTeams(
        dev.duetime.admin.v1.ListTeamsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListTeamsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Changes a team's `display_name` or `notification_url`.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.admin.v1.UpdateTeamResponse> updateTeam(
        dev.duetime.admin.v1.UpdateTeamRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getUpdateTeamMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Sets or resets the limits named in `update_mask` for one team.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.admin.v1.UpdateTeamQuotaResponse> updateTeamQuota(
        dev.duetime.admin.v1.UpdateTeamQuotaRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getUpdateTeamQuotaMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Returns the platform's default quota, which applies to every limit a team was not given.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.admin.v1.GetQuotaDefaultsResponse> getQuotaDefaults(
        dev.duetime.admin.v1.GetQuotaDefaultsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetQuotaDefaultsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Changes the limits named in `update_mask` of the platform's default quota.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.admin.v1.UpdateQuotaDefaultsResponse> updateQuotaDefaults(
        dev.duetime.admin.v1.UpdateQuotaDefaultsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getUpdateQuotaDefaultsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Creates a bearer token; its secret is in the answer only, never stored (a SHA-256 digest
     * is).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.admin.v1.CreateTokenResponse> createToken(
        dev.duetime.admin.v1.CreateTokenRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCreateTokenMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists tokens (never their secrets), newest first.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.admin.v1.ListTokensResponse> listTokens(
        dev.duetime.admin.v1.ListTokensRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListTokensMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Revokes a token. Services stop accepting it within 10 seconds (they cache lookups).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.admin.v1.RevokeTokenResponse> revokeToken(
        dev.duetime.admin.v1.RevokeTokenRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRevokeTokenMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_CREATE_TEAM = 0;
  private static final int METHODID_GET_TEAM = 1;
  private static final int METHODID_LIST_TEAMS = 2;
  private static final int METHODID_UPDATE_TEAM = 3;
  private static final int METHODID_UPDATE_TEAM_QUOTA = 4;
  private static final int METHODID_GET_QUOTA_DEFAULTS = 5;
  private static final int METHODID_UPDATE_QUOTA_DEFAULTS = 6;
  private static final int METHODID_CREATE_TOKEN = 7;
  private static final int METHODID_LIST_TOKENS = 8;
  private static final int METHODID_REVOKE_TOKEN = 9;

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
        case METHODID_CREATE_TEAM:
          serviceImpl.createTeam((dev.duetime.admin.v1.CreateTeamRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.admin.v1.CreateTeamResponse>) responseObserver);
          break;
        case METHODID_GET_TEAM:
          serviceImpl.getTeam((dev.duetime.admin.v1.GetTeamRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.admin.v1.GetTeamResponse>) responseObserver);
          break;
        case METHODID_LIST_TEAMS:
          serviceImpl.listTeams((dev.duetime.admin.v1.ListTeamsRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.admin.v1.ListTeamsResponse>) responseObserver);
          break;
        case METHODID_UPDATE_TEAM:
          serviceImpl.updateTeam((dev.duetime.admin.v1.UpdateTeamRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.admin.v1.UpdateTeamResponse>) responseObserver);
          break;
        case METHODID_UPDATE_TEAM_QUOTA:
          serviceImpl.updateTeamQuota((dev.duetime.admin.v1.UpdateTeamQuotaRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.admin.v1.UpdateTeamQuotaResponse>) responseObserver);
          break;
        case METHODID_GET_QUOTA_DEFAULTS:
          serviceImpl.getQuotaDefaults((dev.duetime.admin.v1.GetQuotaDefaultsRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.admin.v1.GetQuotaDefaultsResponse>) responseObserver);
          break;
        case METHODID_UPDATE_QUOTA_DEFAULTS:
          serviceImpl.updateQuotaDefaults((dev.duetime.admin.v1.UpdateQuotaDefaultsRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.admin.v1.UpdateQuotaDefaultsResponse>) responseObserver);
          break;
        case METHODID_CREATE_TOKEN:
          serviceImpl.createToken((dev.duetime.admin.v1.CreateTokenRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.admin.v1.CreateTokenResponse>) responseObserver);
          break;
        case METHODID_LIST_TOKENS:
          serviceImpl.listTokens((dev.duetime.admin.v1.ListTokensRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.admin.v1.ListTokensResponse>) responseObserver);
          break;
        case METHODID_REVOKE_TOKEN:
          serviceImpl.revokeToken((dev.duetime.admin.v1.RevokeTokenRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.admin.v1.RevokeTokenResponse>) responseObserver);
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
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getCreateTeamMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.admin.v1.CreateTeamRequest,
              dev.duetime.admin.v1.CreateTeamResponse>(
                service, METHODID_CREATE_TEAM)))
        .addMethod(
          getGetTeamMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.admin.v1.GetTeamRequest,
              dev.duetime.admin.v1.GetTeamResponse>(
                service, METHODID_GET_TEAM)))
        .addMethod(
          getListTeamsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.admin.v1.ListTeamsRequest,
              dev.duetime.admin.v1.ListTeamsResponse>(
                service, METHODID_LIST_TEAMS)))
        .addMethod(
          getUpdateTeamMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.admin.v1.UpdateTeamRequest,
              dev.duetime.admin.v1.UpdateTeamResponse>(
                service, METHODID_UPDATE_TEAM)))
        .addMethod(
          getUpdateTeamQuotaMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.admin.v1.UpdateTeamQuotaRequest,
              dev.duetime.admin.v1.UpdateTeamQuotaResponse>(
                service, METHODID_UPDATE_TEAM_QUOTA)))
        .addMethod(
          getGetQuotaDefaultsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.admin.v1.GetQuotaDefaultsRequest,
              dev.duetime.admin.v1.GetQuotaDefaultsResponse>(
                service, METHODID_GET_QUOTA_DEFAULTS)))
        .addMethod(
          getUpdateQuotaDefaultsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.admin.v1.UpdateQuotaDefaultsRequest,
              dev.duetime.admin.v1.UpdateQuotaDefaultsResponse>(
                service, METHODID_UPDATE_QUOTA_DEFAULTS)))
        .addMethod(
          getCreateTokenMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.admin.v1.CreateTokenRequest,
              dev.duetime.admin.v1.CreateTokenResponse>(
                service, METHODID_CREATE_TOKEN)))
        .addMethod(
          getListTokensMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.admin.v1.ListTokensRequest,
              dev.duetime.admin.v1.ListTokensResponse>(
                service, METHODID_LIST_TOKENS)))
        .addMethod(
          getRevokeTokenMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.admin.v1.RevokeTokenRequest,
              dev.duetime.admin.v1.RevokeTokenResponse>(
                service, METHODID_REVOKE_TOKEN)))
        .build();
  }

  private static abstract class AdminServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    AdminServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.duetime.admin.v1.AdminServiceProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("AdminService");
    }
  }

  private static final class AdminServiceFileDescriptorSupplier
      extends AdminServiceBaseDescriptorSupplier {
    AdminServiceFileDescriptorSupplier() {}
  }

  private static final class AdminServiceMethodDescriptorSupplier
      extends AdminServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    AdminServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (AdminServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new AdminServiceFileDescriptorSupplier())
              .addMethod(getCreateTeamMethod())
              .addMethod(getGetTeamMethod())
              .addMethod(getListTeamsMethod())
              .addMethod(getUpdateTeamMethod())
              .addMethod(getUpdateTeamQuotaMethod())
              .addMethod(getGetQuotaDefaultsMethod())
              .addMethod(getUpdateQuotaDefaultsMethod())
              .addMethod(getCreateTokenMethod())
              .addMethod(getListTokensMethod())
              .addMethod(getRevokeTokenMethod())
              .build();
        }
      }
    }
    return result;
  }
}
