package dev.duetime.jobs.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * Create, read, change and inspect jobs and their runs.
 * Every call must carry `authorization: Bearer &lt;team token&gt;` metadata; a team sees and changes
 * only its own jobs (another team's job is NOT_FOUND). Errors use the standard gRPC codes with a
 * `google.rpc.ErrorInfo` detail (domain `duetime.dev`, an UPPER_SNAKE reason) and, for bad
 * input, a `google.rpc.BadRequest` naming every bad field.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class JobServiceGrpc {

  private JobServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "duetime.jobs.v1.JobService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.CreateJobRequest,
      dev.duetime.jobs.v1.CreateJobResponse> getCreateJobMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CreateJob",
      requestType = dev.duetime.jobs.v1.CreateJobRequest.class,
      responseType = dev.duetime.jobs.v1.CreateJobResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.CreateJobRequest,
      dev.duetime.jobs.v1.CreateJobResponse> getCreateJobMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.CreateJobRequest, dev.duetime.jobs.v1.CreateJobResponse> getCreateJobMethod;
    if ((getCreateJobMethod = JobServiceGrpc.getCreateJobMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getCreateJobMethod = JobServiceGrpc.getCreateJobMethod) == null) {
          JobServiceGrpc.getCreateJobMethod = getCreateJobMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.CreateJobRequest, dev.duetime.jobs.v1.CreateJobResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CreateJob"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.CreateJobRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.CreateJobResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("CreateJob"))
              .build();
        }
      }
    }
    return getCreateJobMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.GetJobRequest,
      dev.duetime.jobs.v1.GetJobResponse> getGetJobMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetJob",
      requestType = dev.duetime.jobs.v1.GetJobRequest.class,
      responseType = dev.duetime.jobs.v1.GetJobResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.GetJobRequest,
      dev.duetime.jobs.v1.GetJobResponse> getGetJobMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.GetJobRequest, dev.duetime.jobs.v1.GetJobResponse> getGetJobMethod;
    if ((getGetJobMethod = JobServiceGrpc.getGetJobMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getGetJobMethod = JobServiceGrpc.getGetJobMethod) == null) {
          JobServiceGrpc.getGetJobMethod = getGetJobMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.GetJobRequest, dev.duetime.jobs.v1.GetJobResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetJob"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.GetJobRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.GetJobResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("GetJob"))
              .build();
        }
      }
    }
    return getGetJobMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ListJobsRequest,
      dev.duetime.jobs.v1.ListJobsResponse> getListJobsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListJobs",
      requestType = dev.duetime.jobs.v1.ListJobsRequest.class,
      responseType = dev.duetime.jobs.v1.ListJobsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ListJobsRequest,
      dev.duetime.jobs.v1.ListJobsResponse> getListJobsMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ListJobsRequest, dev.duetime.jobs.v1.ListJobsResponse> getListJobsMethod;
    if ((getListJobsMethod = JobServiceGrpc.getListJobsMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getListJobsMethod = JobServiceGrpc.getListJobsMethod) == null) {
          JobServiceGrpc.getListJobsMethod = getListJobsMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.ListJobsRequest, dev.duetime.jobs.v1.ListJobsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListJobs"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.ListJobsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.ListJobsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("ListJobs"))
              .build();
        }
      }
    }
    return getListJobsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.UpdateJobRequest,
      dev.duetime.jobs.v1.UpdateJobResponse> getUpdateJobMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "UpdateJob",
      requestType = dev.duetime.jobs.v1.UpdateJobRequest.class,
      responseType = dev.duetime.jobs.v1.UpdateJobResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.UpdateJobRequest,
      dev.duetime.jobs.v1.UpdateJobResponse> getUpdateJobMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.UpdateJobRequest, dev.duetime.jobs.v1.UpdateJobResponse> getUpdateJobMethod;
    if ((getUpdateJobMethod = JobServiceGrpc.getUpdateJobMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getUpdateJobMethod = JobServiceGrpc.getUpdateJobMethod) == null) {
          JobServiceGrpc.getUpdateJobMethod = getUpdateJobMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.UpdateJobRequest, dev.duetime.jobs.v1.UpdateJobResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "UpdateJob"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.UpdateJobRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.UpdateJobResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("UpdateJob"))
              .build();
        }
      }
    }
    return getUpdateJobMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.DeleteJobRequest,
      dev.duetime.jobs.v1.DeleteJobResponse> getDeleteJobMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DeleteJob",
      requestType = dev.duetime.jobs.v1.DeleteJobRequest.class,
      responseType = dev.duetime.jobs.v1.DeleteJobResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.DeleteJobRequest,
      dev.duetime.jobs.v1.DeleteJobResponse> getDeleteJobMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.DeleteJobRequest, dev.duetime.jobs.v1.DeleteJobResponse> getDeleteJobMethod;
    if ((getDeleteJobMethod = JobServiceGrpc.getDeleteJobMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getDeleteJobMethod = JobServiceGrpc.getDeleteJobMethod) == null) {
          JobServiceGrpc.getDeleteJobMethod = getDeleteJobMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.DeleteJobRequest, dev.duetime.jobs.v1.DeleteJobResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DeleteJob"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.DeleteJobRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.DeleteJobResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("DeleteJob"))
              .build();
        }
      }
    }
    return getDeleteJobMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.PauseJobRequest,
      dev.duetime.jobs.v1.PauseJobResponse> getPauseJobMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "PauseJob",
      requestType = dev.duetime.jobs.v1.PauseJobRequest.class,
      responseType = dev.duetime.jobs.v1.PauseJobResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.PauseJobRequest,
      dev.duetime.jobs.v1.PauseJobResponse> getPauseJobMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.PauseJobRequest, dev.duetime.jobs.v1.PauseJobResponse> getPauseJobMethod;
    if ((getPauseJobMethod = JobServiceGrpc.getPauseJobMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getPauseJobMethod = JobServiceGrpc.getPauseJobMethod) == null) {
          JobServiceGrpc.getPauseJobMethod = getPauseJobMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.PauseJobRequest, dev.duetime.jobs.v1.PauseJobResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "PauseJob"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.PauseJobRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.PauseJobResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("PauseJob"))
              .build();
        }
      }
    }
    return getPauseJobMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ResumeJobRequest,
      dev.duetime.jobs.v1.ResumeJobResponse> getResumeJobMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ResumeJob",
      requestType = dev.duetime.jobs.v1.ResumeJobRequest.class,
      responseType = dev.duetime.jobs.v1.ResumeJobResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ResumeJobRequest,
      dev.duetime.jobs.v1.ResumeJobResponse> getResumeJobMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ResumeJobRequest, dev.duetime.jobs.v1.ResumeJobResponse> getResumeJobMethod;
    if ((getResumeJobMethod = JobServiceGrpc.getResumeJobMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getResumeJobMethod = JobServiceGrpc.getResumeJobMethod) == null) {
          JobServiceGrpc.getResumeJobMethod = getResumeJobMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.ResumeJobRequest, dev.duetime.jobs.v1.ResumeJobResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ResumeJob"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.ResumeJobRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.ResumeJobResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("ResumeJob"))
              .build();
        }
      }
    }
    return getResumeJobMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.TriggerJobRequest,
      dev.duetime.jobs.v1.TriggerJobResponse> getTriggerJobMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "TriggerJob",
      requestType = dev.duetime.jobs.v1.TriggerJobRequest.class,
      responseType = dev.duetime.jobs.v1.TriggerJobResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.TriggerJobRequest,
      dev.duetime.jobs.v1.TriggerJobResponse> getTriggerJobMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.TriggerJobRequest, dev.duetime.jobs.v1.TriggerJobResponse> getTriggerJobMethod;
    if ((getTriggerJobMethod = JobServiceGrpc.getTriggerJobMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getTriggerJobMethod = JobServiceGrpc.getTriggerJobMethod) == null) {
          JobServiceGrpc.getTriggerJobMethod = getTriggerJobMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.TriggerJobRequest, dev.duetime.jobs.v1.TriggerJobResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "TriggerJob"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.TriggerJobRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.TriggerJobResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("TriggerJob"))
              .build();
        }
      }
    }
    return getTriggerJobMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ListRunsRequest,
      dev.duetime.jobs.v1.ListRunsResponse> getListRunsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListRuns",
      requestType = dev.duetime.jobs.v1.ListRunsRequest.class,
      responseType = dev.duetime.jobs.v1.ListRunsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ListRunsRequest,
      dev.duetime.jobs.v1.ListRunsResponse> getListRunsMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ListRunsRequest, dev.duetime.jobs.v1.ListRunsResponse> getListRunsMethod;
    if ((getListRunsMethod = JobServiceGrpc.getListRunsMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getListRunsMethod = JobServiceGrpc.getListRunsMethod) == null) {
          JobServiceGrpc.getListRunsMethod = getListRunsMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.ListRunsRequest, dev.duetime.jobs.v1.ListRunsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListRuns"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.ListRunsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.ListRunsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("ListRuns"))
              .build();
        }
      }
    }
    return getListRunsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.GetRunRequest,
      dev.duetime.jobs.v1.GetRunResponse> getGetRunMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetRun",
      requestType = dev.duetime.jobs.v1.GetRunRequest.class,
      responseType = dev.duetime.jobs.v1.GetRunResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.GetRunRequest,
      dev.duetime.jobs.v1.GetRunResponse> getGetRunMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.GetRunRequest, dev.duetime.jobs.v1.GetRunResponse> getGetRunMethod;
    if ((getGetRunMethod = JobServiceGrpc.getGetRunMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getGetRunMethod = JobServiceGrpc.getGetRunMethod) == null) {
          JobServiceGrpc.getGetRunMethod = getGetRunMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.GetRunRequest, dev.duetime.jobs.v1.GetRunResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetRun"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.GetRunRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.GetRunResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("GetRun"))
              .build();
        }
      }
    }
    return getGetRunMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.RedriveRunRequest,
      dev.duetime.jobs.v1.RedriveRunResponse> getRedriveRunMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "RedriveRun",
      requestType = dev.duetime.jobs.v1.RedriveRunRequest.class,
      responseType = dev.duetime.jobs.v1.RedriveRunResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.RedriveRunRequest,
      dev.duetime.jobs.v1.RedriveRunResponse> getRedriveRunMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.RedriveRunRequest, dev.duetime.jobs.v1.RedriveRunResponse> getRedriveRunMethod;
    if ((getRedriveRunMethod = JobServiceGrpc.getRedriveRunMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getRedriveRunMethod = JobServiceGrpc.getRedriveRunMethod) == null) {
          JobServiceGrpc.getRedriveRunMethod = getRedriveRunMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.RedriveRunRequest, dev.duetime.jobs.v1.RedriveRunResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "RedriveRun"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.RedriveRunRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.RedriveRunResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("RedriveRun"))
              .build();
        }
      }
    }
    return getRedriveRunMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.PreviewScheduleRequest,
      dev.duetime.jobs.v1.PreviewScheduleResponse> getPreviewScheduleMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "PreviewSchedule",
      requestType = dev.duetime.jobs.v1.PreviewScheduleRequest.class,
      responseType = dev.duetime.jobs.v1.PreviewScheduleResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.PreviewScheduleRequest,
      dev.duetime.jobs.v1.PreviewScheduleResponse> getPreviewScheduleMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.PreviewScheduleRequest, dev.duetime.jobs.v1.PreviewScheduleResponse> getPreviewScheduleMethod;
    if ((getPreviewScheduleMethod = JobServiceGrpc.getPreviewScheduleMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getPreviewScheduleMethod = JobServiceGrpc.getPreviewScheduleMethod) == null) {
          JobServiceGrpc.getPreviewScheduleMethod = getPreviewScheduleMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.PreviewScheduleRequest, dev.duetime.jobs.v1.PreviewScheduleResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "PreviewSchedule"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.PreviewScheduleRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.PreviewScheduleResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("PreviewSchedule"))
              .build();
        }
      }
    }
    return getPreviewScheduleMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.GetTeamQuotaRequest,
      dev.duetime.jobs.v1.GetTeamQuotaResponse> getGetTeamQuotaMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetTeamQuota",
      requestType = dev.duetime.jobs.v1.GetTeamQuotaRequest.class,
      responseType = dev.duetime.jobs.v1.GetTeamQuotaResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.GetTeamQuotaRequest,
      dev.duetime.jobs.v1.GetTeamQuotaResponse> getGetTeamQuotaMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.GetTeamQuotaRequest, dev.duetime.jobs.v1.GetTeamQuotaResponse> getGetTeamQuotaMethod;
    if ((getGetTeamQuotaMethod = JobServiceGrpc.getGetTeamQuotaMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getGetTeamQuotaMethod = JobServiceGrpc.getGetTeamQuotaMethod) == null) {
          JobServiceGrpc.getGetTeamQuotaMethod = getGetTeamQuotaMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.GetTeamQuotaRequest, dev.duetime.jobs.v1.GetTeamQuotaResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetTeamQuota"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.GetTeamQuotaRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.GetTeamQuotaResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("GetTeamQuota"))
              .build();
        }
      }
    }
    return getGetTeamQuotaMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.BatchPauseJobsRequest,
      dev.duetime.jobs.v1.BatchPauseJobsResponse> getBatchPauseJobsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "BatchPauseJobs",
      requestType = dev.duetime.jobs.v1.BatchPauseJobsRequest.class,
      responseType = dev.duetime.jobs.v1.BatchPauseJobsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.BatchPauseJobsRequest,
      dev.duetime.jobs.v1.BatchPauseJobsResponse> getBatchPauseJobsMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.BatchPauseJobsRequest, dev.duetime.jobs.v1.BatchPauseJobsResponse> getBatchPauseJobsMethod;
    if ((getBatchPauseJobsMethod = JobServiceGrpc.getBatchPauseJobsMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getBatchPauseJobsMethod = JobServiceGrpc.getBatchPauseJobsMethod) == null) {
          JobServiceGrpc.getBatchPauseJobsMethod = getBatchPauseJobsMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.BatchPauseJobsRequest, dev.duetime.jobs.v1.BatchPauseJobsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "BatchPauseJobs"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.BatchPauseJobsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.BatchPauseJobsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("BatchPauseJobs"))
              .build();
        }
      }
    }
    return getBatchPauseJobsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.BatchResumeJobsRequest,
      dev.duetime.jobs.v1.BatchResumeJobsResponse> getBatchResumeJobsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "BatchResumeJobs",
      requestType = dev.duetime.jobs.v1.BatchResumeJobsRequest.class,
      responseType = dev.duetime.jobs.v1.BatchResumeJobsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.BatchResumeJobsRequest,
      dev.duetime.jobs.v1.BatchResumeJobsResponse> getBatchResumeJobsMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.BatchResumeJobsRequest, dev.duetime.jobs.v1.BatchResumeJobsResponse> getBatchResumeJobsMethod;
    if ((getBatchResumeJobsMethod = JobServiceGrpc.getBatchResumeJobsMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getBatchResumeJobsMethod = JobServiceGrpc.getBatchResumeJobsMethod) == null) {
          JobServiceGrpc.getBatchResumeJobsMethod = getBatchResumeJobsMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.BatchResumeJobsRequest, dev.duetime.jobs.v1.BatchResumeJobsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "BatchResumeJobs"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.BatchResumeJobsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.BatchResumeJobsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("BatchResumeJobs"))
              .build();
        }
      }
    }
    return getBatchResumeJobsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ExplainOccurrenceRequest,
      dev.duetime.jobs.v1.ExplainOccurrenceResponse> getExplainOccurrenceMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ExplainOccurrence",
      requestType = dev.duetime.jobs.v1.ExplainOccurrenceRequest.class,
      responseType = dev.duetime.jobs.v1.ExplainOccurrenceResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ExplainOccurrenceRequest,
      dev.duetime.jobs.v1.ExplainOccurrenceResponse> getExplainOccurrenceMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ExplainOccurrenceRequest, dev.duetime.jobs.v1.ExplainOccurrenceResponse> getExplainOccurrenceMethod;
    if ((getExplainOccurrenceMethod = JobServiceGrpc.getExplainOccurrenceMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getExplainOccurrenceMethod = JobServiceGrpc.getExplainOccurrenceMethod) == null) {
          JobServiceGrpc.getExplainOccurrenceMethod = getExplainOccurrenceMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.ExplainOccurrenceRequest, dev.duetime.jobs.v1.ExplainOccurrenceResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ExplainOccurrence"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.ExplainOccurrenceRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.ExplainOccurrenceResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("ExplainOccurrence"))
              .build();
        }
      }
    }
    return getExplainOccurrenceMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ListJobVersionsRequest,
      dev.duetime.jobs.v1.ListJobVersionsResponse> getListJobVersionsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListJobVersions",
      requestType = dev.duetime.jobs.v1.ListJobVersionsRequest.class,
      responseType = dev.duetime.jobs.v1.ListJobVersionsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ListJobVersionsRequest,
      dev.duetime.jobs.v1.ListJobVersionsResponse> getListJobVersionsMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.ListJobVersionsRequest, dev.duetime.jobs.v1.ListJobVersionsResponse> getListJobVersionsMethod;
    if ((getListJobVersionsMethod = JobServiceGrpc.getListJobVersionsMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getListJobVersionsMethod = JobServiceGrpc.getListJobVersionsMethod) == null) {
          JobServiceGrpc.getListJobVersionsMethod = getListJobVersionsMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.ListJobVersionsRequest, dev.duetime.jobs.v1.ListJobVersionsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListJobVersions"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.ListJobVersionsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.ListJobVersionsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("ListJobVersions"))
              .build();
        }
      }
    }
    return getListJobVersionsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.duetime.jobs.v1.BatchRedriveRunsRequest,
      dev.duetime.jobs.v1.BatchRedriveRunsResponse> getBatchRedriveRunsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "BatchRedriveRuns",
      requestType = dev.duetime.jobs.v1.BatchRedriveRunsRequest.class,
      responseType = dev.duetime.jobs.v1.BatchRedriveRunsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.duetime.jobs.v1.BatchRedriveRunsRequest,
      dev.duetime.jobs.v1.BatchRedriveRunsResponse> getBatchRedriveRunsMethod() {
    io.grpc.MethodDescriptor<dev.duetime.jobs.v1.BatchRedriveRunsRequest, dev.duetime.jobs.v1.BatchRedriveRunsResponse> getBatchRedriveRunsMethod;
    if ((getBatchRedriveRunsMethod = JobServiceGrpc.getBatchRedriveRunsMethod) == null) {
      synchronized (JobServiceGrpc.class) {
        if ((getBatchRedriveRunsMethod = JobServiceGrpc.getBatchRedriveRunsMethod) == null) {
          JobServiceGrpc.getBatchRedriveRunsMethod = getBatchRedriveRunsMethod =
              io.grpc.MethodDescriptor.<dev.duetime.jobs.v1.BatchRedriveRunsRequest, dev.duetime.jobs.v1.BatchRedriveRunsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "BatchRedriveRuns"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.BatchRedriveRunsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.duetime.jobs.v1.BatchRedriveRunsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new JobServiceMethodDescriptorSupplier("BatchRedriveRuns"))
              .build();
        }
      }
    }
    return getBatchRedriveRunsMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static JobServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<JobServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<JobServiceStub>() {
        @java.lang.Override
        public JobServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new JobServiceStub(channel, callOptions);
        }
      };
    return JobServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static JobServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<JobServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<JobServiceBlockingV2Stub>() {
        @java.lang.Override
        public JobServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new JobServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return JobServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static JobServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<JobServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<JobServiceBlockingStub>() {
        @java.lang.Override
        public JobServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new JobServiceBlockingStub(channel, callOptions);
        }
      };
    return JobServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static JobServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<JobServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<JobServiceFutureStub>() {
        @java.lang.Override
        public JobServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new JobServiceFutureStub(channel, callOptions);
        }
      };
    return JobServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * Create, read, change and inspect jobs and their runs.
   * Every call must carry `authorization: Bearer &lt;team token&gt;` metadata; a team sees and changes
   * only its own jobs (another team's job is NOT_FOUND). Errors use the standard gRPC codes with a
   * `google.rpc.ErrorInfo` detail (domain `duetime.dev`, an UPPER_SNAKE reason) and, for bad
   * input, a `google.rpc.BadRequest` naming every bad field.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Creates a job and computes its first run time. Idempotent by `request_id`: a repeated call
     * with the same id returns the job created the first time.
     * </pre>
     */
    default void createJob(dev.duetime.jobs.v1.CreateJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.CreateJobResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCreateJobMethod(), responseObserver);
    }

    /**
     * <pre>
     * Returns one job.
     * </pre>
     */
    default void getJob(dev.duetime.jobs.v1.GetJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.GetJobResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetJobMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists the team's jobs, newest first.
     * </pre>
     */
    default void listJobs(dev.duetime.jobs.v1.ListJobsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ListJobsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListJobsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Changes the fields named in `update_mask`. A schedule change recomputes the next run time
     * from now (a schedule equal to the stored one is no change); runs already claimed keep the
     * definition they were claimed with. The answer says whether and how the next run moved.
     * With `validate_only`, nothing changes: the answer is the job as the update would leave it,
     * with its next occurrences before and after the change.
     * </pre>
     */
    default void updateJob(dev.duetime.jobs.v1.UpdateJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.UpdateJobResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getUpdateJobMethod(), responseObserver);
    }

    /**
     * <pre>
     * Deletes a job. Queued runs are cancelled when a worker picks them up; a running attempt is
     * told to cancel. The run history stays readable through ListRuns/GetRun until retention.
     * </pre>
     */
    default void deleteJob(dev.duetime.jobs.v1.DeleteJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.DeleteJobResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDeleteJobMethod(), responseObserver);
    }

    /**
     * <pre>
     * Pauses an active job: nothing runs; occurrences during the pause are recorded as SKIPPED
     * (JOB_PAUSED). The job keeps the pause's note and author (`Job.pause`) until it is resumed.
     * FAILED_PRECONDITION unless the job is ACTIVE.
     * </pre>
     */
    default void pauseJob(dev.duetime.jobs.v1.PauseJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.PauseJobResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getPauseJobMethod(), responseObserver);
    }

    /**
     * <pre>
     * Resumes a paused job from now; occurrences during the pause are not caught up, unless
     * `catch_up` asks the job's misfire policy to decide. The answer says what became of the
     * occurrences the pause covered; with `validate_only`, what would, and nothing changes.
     * FAILED_PRECONDITION unless the job is PAUSED.
     * </pre>
     */
    default void resumeJob(dev.duetime.jobs.v1.ResumeJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ResumeJobResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getResumeJobMethod(), responseObserver);
    }

    /**
     * <pre>
     * Starts one run now, outside the schedule, whatever the job's state except deleted.
     * Idempotent by `request_id`: a retried call returns the same run.
     * </pre>
     */
    default void triggerJob(dev.duetime.jobs.v1.TriggerJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.TriggerJobResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getTriggerJobMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists a job's runs, latest nominal time first.
     * </pre>
     */
    default void listRuns(dev.duetime.jobs.v1.ListRunsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ListRunsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListRunsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Returns one run with its attempts.
     * </pre>
     */
    default void getRun(dev.duetime.jobs.v1.GetRunRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.GetRunResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetRunMethod(), responseObserver);
    }

    /**
     * <pre>
     * Sends a DEAD_LETTERED run back to the queue with a fresh attempt budget; attempt numbers
     * keep rising. Idempotent by `request_id`. FAILED_PRECONDITION unless the run is
     * DEAD_LETTERED.
     * </pre>
     */
    default void redriveRun(dev.duetime.jobs.v1.RedriveRunRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.RedriveRunResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRedriveRunMethod(), responseObserver);
    }

    /**
     * <pre>
     * Computes the next fire times of a schedule, or of a stored job, with the same code the
     * scheduler uses: shows what DST, jitter and the schedule will do before you commit.
     * </pre>
     */
    default void previewSchedule(dev.duetime.jobs.v1.PreviewScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.PreviewScheduleResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getPreviewScheduleMethod(), responseObserver);
    }

    /**
     * <pre>
     * Returns the calling team's quota (the limits in force: its own, or the platform's
     * defaults) and what it uses of it now.
     * </pre>
     */
    default void getTeamQuota(dev.duetime.jobs.v1.GetTeamQuotaRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.GetTeamQuotaResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetTeamQuotaMethod(), responseObserver);
    }

    /**
     * <pre>
     * Pauses many jobs at once, named or matched by a filter, as PauseJob does each. With
     * `validate_only`, only counts them. Each job's outcome is reported; one job's failure does
     * not stop the others.
     * </pre>
     */
    default void batchPauseJobs(dev.duetime.jobs.v1.BatchPauseJobsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.BatchPauseJobsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getBatchPauseJobsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Resumes many jobs at once, as ResumeJob does each; like BatchPauseJobs.
     * </pre>
     */
    default void batchResumeJobs(dev.duetime.jobs.v1.BatchResumeJobsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.BatchResumeJobsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getBatchResumeJobsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Answers why an occurrence of a job ran or did not: the fate of the occurrence at the time
     * asked, from the runs table's records (a range record stands for many occurrences) and the
     * schedule in force at that time (the job's version then, not today's). A time that is no
     * occurrence is answered with the nearest ones before and after; a wall-clock time in a DST
     * gap or fold is explained.
     * </pre>
     */
    default void explainOccurrence(dev.duetime.jobs.v1.ExplainOccurrenceRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ExplainOccurrenceResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getExplainOccurrenceMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists a job's versions, newest first: each change's time, author, call and the fields it
     * changed, with the definition it left (secret values redacted). A deleted job's history
     * stays readable.
     * </pre>
     */
    default void listJobVersions(dev.duetime.jobs.v1.ListJobVersionsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ListJobVersionsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListJobVersionsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Redrives many DEAD_LETTERED runs at once, named or matched by a filter, as RedriveRun does
     * each. With `validate_only`, only counts them. Idempotent by `request_id`.
     * </pre>
     */
    default void batchRedriveRuns(dev.duetime.jobs.v1.BatchRedriveRunsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.BatchRedriveRunsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getBatchRedriveRunsMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service JobService.
   * <pre>
   * Create, read, change and inspect jobs and their runs.
   * Every call must carry `authorization: Bearer &lt;team token&gt;` metadata; a team sees and changes
   * only its own jobs (another team's job is NOT_FOUND). Errors use the standard gRPC codes with a
   * `google.rpc.ErrorInfo` detail (domain `duetime.dev`, an UPPER_SNAKE reason) and, for bad
   * input, a `google.rpc.BadRequest` naming every bad field.
   * </pre>
   */
  public static abstract class JobServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return JobServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service JobService.
   * <pre>
   * Create, read, change and inspect jobs and their runs.
   * Every call must carry `authorization: Bearer &lt;team token&gt;` metadata; a team sees and changes
   * only its own jobs (another team's job is NOT_FOUND). Errors use the standard gRPC codes with a
   * `google.rpc.ErrorInfo` detail (domain `duetime.dev`, an UPPER_SNAKE reason) and, for bad
   * input, a `google.rpc.BadRequest` naming every bad field.
   * </pre>
   */
  public static final class JobServiceStub
      extends io.grpc.stub.AbstractAsyncStub<JobServiceStub> {
    private JobServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected JobServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new JobServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates a job and computes its first run time. Idempotent by `request_id`: a repeated call
     * with the same id returns the job created the first time.
     * </pre>
     */
    public void createJob(dev.duetime.jobs.v1.CreateJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.CreateJobResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCreateJobMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Returns one job.
     * </pre>
     */
    public void getJob(dev.duetime.jobs.v1.GetJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.GetJobResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetJobMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists the team's jobs, newest first.
     * </pre>
     */
    public void listJobs(dev.duetime.jobs.v1.ListJobsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ListJobsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListJobsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Changes the fields named in `update_mask`. A schedule change recomputes the next run time
     * from now (a schedule equal to the stored one is no change); runs already claimed keep the
     * definition they were claimed with. The answer says whether and how the next run moved.
     * With `validate_only`, nothing changes: the answer is the job as the update would leave it,
     * with its next occurrences before and after the change.
     * </pre>
     */
    public void updateJob(dev.duetime.jobs.v1.UpdateJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.UpdateJobResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getUpdateJobMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Deletes a job. Queued runs are cancelled when a worker picks them up; a running attempt is
     * told to cancel. The run history stays readable through ListRuns/GetRun until retention.
     * </pre>
     */
    public void deleteJob(dev.duetime.jobs.v1.DeleteJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.DeleteJobResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDeleteJobMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Pauses an active job: nothing runs; occurrences during the pause are recorded as SKIPPED
     * (JOB_PAUSED). The job keeps the pause's note and author (`Job.pause`) until it is resumed.
     * FAILED_PRECONDITION unless the job is ACTIVE.
     * </pre>
     */
    public void pauseJob(dev.duetime.jobs.v1.PauseJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.PauseJobResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getPauseJobMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Resumes a paused job from now; occurrences during the pause are not caught up, unless
     * `catch_up` asks the job's misfire policy to decide. The answer says what became of the
     * occurrences the pause covered; with `validate_only`, what would, and nothing changes.
     * FAILED_PRECONDITION unless the job is PAUSED.
     * </pre>
     */
    public void resumeJob(dev.duetime.jobs.v1.ResumeJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ResumeJobResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getResumeJobMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Starts one run now, outside the schedule, whatever the job's state except deleted.
     * Idempotent by `request_id`: a retried call returns the same run.
     * </pre>
     */
    public void triggerJob(dev.duetime.jobs.v1.TriggerJobRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.TriggerJobResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getTriggerJobMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists a job's runs, latest nominal time first.
     * </pre>
     */
    public void listRuns(dev.duetime.jobs.v1.ListRunsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ListRunsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListRunsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Returns one run with its attempts.
     * </pre>
     */
    public void getRun(dev.duetime.jobs.v1.GetRunRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.GetRunResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetRunMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Sends a DEAD_LETTERED run back to the queue with a fresh attempt budget; attempt numbers
     * keep rising. Idempotent by `request_id`. FAILED_PRECONDITION unless the run is
     * DEAD_LETTERED.
     * </pre>
     */
    public void redriveRun(dev.duetime.jobs.v1.RedriveRunRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.RedriveRunResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRedriveRunMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Computes the next fire times of a schedule, or of a stored job, with the same code the
     * scheduler uses: shows what DST, jitter and the schedule will do before you commit.
     * </pre>
     */
    public void previewSchedule(dev.duetime.jobs.v1.PreviewScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.PreviewScheduleResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getPreviewScheduleMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Returns the calling team's quota (the limits in force: its own, or the platform's
     * defaults) and what it uses of it now.
     * </pre>
     */
    public void getTeamQuota(dev.duetime.jobs.v1.GetTeamQuotaRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.GetTeamQuotaResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetTeamQuotaMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Pauses many jobs at once, named or matched by a filter, as PauseJob does each. With
     * `validate_only`, only counts them. Each job's outcome is reported; one job's failure does
     * not stop the others.
     * </pre>
     */
    public void batchPauseJobs(dev.duetime.jobs.v1.BatchPauseJobsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.BatchPauseJobsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getBatchPauseJobsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Resumes many jobs at once, as ResumeJob does each; like BatchPauseJobs.
     * </pre>
     */
    public void batchResumeJobs(dev.duetime.jobs.v1.BatchResumeJobsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.BatchResumeJobsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getBatchResumeJobsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Answers why an occurrence of a job ran or did not: the fate of the occurrence at the time
     * asked, from the runs table's records (a range record stands for many occurrences) and the
     * schedule in force at that time (the job's version then, not today's). A time that is no
     * occurrence is answered with the nearest ones before and after; a wall-clock time in a DST
     * gap or fold is explained.
     * </pre>
     */
    public void explainOccurrence(dev.duetime.jobs.v1.ExplainOccurrenceRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ExplainOccurrenceResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getExplainOccurrenceMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists a job's versions, newest first: each change's time, author, call and the fields it
     * changed, with the definition it left (secret values redacted). A deleted job's history
     * stays readable.
     * </pre>
     */
    public void listJobVersions(dev.duetime.jobs.v1.ListJobVersionsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ListJobVersionsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListJobVersionsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Redrives many DEAD_LETTERED runs at once, named or matched by a filter, as RedriveRun does
     * each. With `validate_only`, only counts them. Idempotent by `request_id`.
     * </pre>
     */
    public void batchRedriveRuns(dev.duetime.jobs.v1.BatchRedriveRunsRequest request,
        io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.BatchRedriveRunsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getBatchRedriveRunsMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service JobService.
   * <pre>
   * Create, read, change and inspect jobs and their runs.
   * Every call must carry `authorization: Bearer &lt;team token&gt;` metadata; a team sees and changes
   * only its own jobs (another team's job is NOT_FOUND). Errors use the standard gRPC codes with a
   * `google.rpc.ErrorInfo` detail (domain `duetime.dev`, an UPPER_SNAKE reason) and, for bad
   * input, a `google.rpc.BadRequest` naming every bad field.
   * </pre>
   */
  public static final class JobServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<JobServiceBlockingV2Stub> {
    private JobServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected JobServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new JobServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates a job and computes its first run time. Idempotent by `request_id`: a repeated call
     * with the same id returns the job created the first time.
     * </pre>
     */
    public dev.duetime.jobs.v1.CreateJobResponse createJob(dev.duetime.jobs.v1.CreateJobRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCreateJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns one job.
     * </pre>
     */
    public dev.duetime.jobs.v1.GetJobResponse getJob(dev.duetime.jobs.v1.GetJobRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the team's jobs, newest first.
     * </pre>
     */
    public dev.duetime.jobs.v1.ListJobsResponse listJobs(dev.duetime.jobs.v1.ListJobsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListJobsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Changes the fields named in `update_mask`. A schedule change recomputes the next run time
     * from now (a schedule equal to the stored one is no change); runs already claimed keep the
     * definition they were claimed with. The answer says whether and how the next run moved.
     * With `validate_only`, nothing changes: the answer is the job as the update would leave it,
     * with its next occurrences before and after the change.
     * </pre>
     */
    public dev.duetime.jobs.v1.UpdateJobResponse updateJob(dev.duetime.jobs.v1.UpdateJobRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getUpdateJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Deletes a job. Queued runs are cancelled when a worker picks them up; a running attempt is
     * told to cancel. The run history stays readable through ListRuns/GetRun until retention.
     * </pre>
     */
    public dev.duetime.jobs.v1.DeleteJobResponse deleteJob(dev.duetime.jobs.v1.DeleteJobRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDeleteJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Pauses an active job: nothing runs; occurrences during the pause are recorded as SKIPPED
     * (JOB_PAUSED). The job keeps the pause's note and author (`Job.pause`) until it is resumed.
     * FAILED_PRECONDITION unless the job is ACTIVE.
     * </pre>
     */
    public dev.duetime.jobs.v1.PauseJobResponse pauseJob(dev.duetime.jobs.v1.PauseJobRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getPauseJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Resumes a paused job from now; occurrences during the pause are not caught up, unless
     * `catch_up` asks the job's misfire policy to decide. The answer says what became of the
     * occurrences the pause covered; with `validate_only`, what would, and nothing changes.
     * FAILED_PRECONDITION unless the job is PAUSED.
     * </pre>
     */
    public dev.duetime.jobs.v1.ResumeJobResponse resumeJob(dev.duetime.jobs.v1.ResumeJobRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getResumeJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Starts one run now, outside the schedule, whatever the job's state except deleted.
     * Idempotent by `request_id`: a retried call returns the same run.
     * </pre>
     */
    public dev.duetime.jobs.v1.TriggerJobResponse triggerJob(dev.duetime.jobs.v1.TriggerJobRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getTriggerJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists a job's runs, latest nominal time first.
     * </pre>
     */
    public dev.duetime.jobs.v1.ListRunsResponse listRuns(dev.duetime.jobs.v1.ListRunsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListRunsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns one run with its attempts.
     * </pre>
     */
    public dev.duetime.jobs.v1.GetRunResponse getRun(dev.duetime.jobs.v1.GetRunRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetRunMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Sends a DEAD_LETTERED run back to the queue with a fresh attempt budget; attempt numbers
     * keep rising. Idempotent by `request_id`. FAILED_PRECONDITION unless the run is
     * DEAD_LETTERED.
     * </pre>
     */
    public dev.duetime.jobs.v1.RedriveRunResponse redriveRun(dev.duetime.jobs.v1.RedriveRunRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRedriveRunMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Computes the next fire times of a schedule, or of a stored job, with the same code the
     * scheduler uses: shows what DST, jitter and the schedule will do before you commit.
     * </pre>
     */
    public dev.duetime.jobs.v1.PreviewScheduleResponse previewSchedule(dev.duetime.jobs.v1.PreviewScheduleRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getPreviewScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns the calling team's quota (the limits in force: its own, or the platform's
     * defaults) and what it uses of it now.
     * </pre>
     */
    public dev.duetime.jobs.v1.GetTeamQuotaResponse getTeamQuota(dev.duetime.jobs.v1.GetTeamQuotaRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetTeamQuotaMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Pauses many jobs at once, named or matched by a filter, as PauseJob does each. With
     * `validate_only`, only counts them. Each job's outcome is reported; one job's failure does
     * not stop the others.
     * </pre>
     */
    public dev.duetime.jobs.v1.BatchPauseJobsResponse batchPauseJobs(dev.duetime.jobs.v1.BatchPauseJobsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getBatchPauseJobsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Resumes many jobs at once, as ResumeJob does each; like BatchPauseJobs.
     * </pre>
     */
    public dev.duetime.jobs.v1.BatchResumeJobsResponse batchResumeJobs(dev.duetime.jobs.v1.BatchResumeJobsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getBatchResumeJobsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Answers why an occurrence of a job ran or did not: the fate of the occurrence at the time
     * asked, from the runs table's records (a range record stands for many occurrences) and the
     * schedule in force at that time (the job's version then, not today's). A time that is no
     * occurrence is answered with the nearest ones before and after; a wall-clock time in a DST
     * gap or fold is explained.
     * </pre>
     */
    public dev.duetime.jobs.v1.ExplainOccurrenceResponse explainOccurrence(dev.duetime.jobs.v1.ExplainOccurrenceRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getExplainOccurrenceMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists a job's versions, newest first: each change's time, author, call and the fields it
     * changed, with the definition it left (secret values redacted). A deleted job's history
     * stays readable.
     * </pre>
     */
    public dev.duetime.jobs.v1.ListJobVersionsResponse listJobVersions(dev.duetime.jobs.v1.ListJobVersionsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListJobVersionsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Redrives many DEAD_LETTERED runs at once, named or matched by a filter, as RedriveRun does
     * each. With `validate_only`, only counts them. Idempotent by `request_id`.
     * </pre>
     */
    public dev.duetime.jobs.v1.BatchRedriveRunsResponse batchRedriveRuns(dev.duetime.jobs.v1.BatchRedriveRunsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getBatchRedriveRunsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service JobService.
   * <pre>
   * Create, read, change and inspect jobs and their runs.
   * Every call must carry `authorization: Bearer &lt;team token&gt;` metadata; a team sees and changes
   * only its own jobs (another team's job is NOT_FOUND). Errors use the standard gRPC codes with a
   * `google.rpc.ErrorInfo` detail (domain `duetime.dev`, an UPPER_SNAKE reason) and, for bad
   * input, a `google.rpc.BadRequest` naming every bad field.
   * </pre>
   */
  public static final class JobServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<JobServiceBlockingStub> {
    private JobServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected JobServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new JobServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates a job and computes its first run time. Idempotent by `request_id`: a repeated call
     * with the same id returns the job created the first time.
     * </pre>
     */
    public dev.duetime.jobs.v1.CreateJobResponse createJob(dev.duetime.jobs.v1.CreateJobRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCreateJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns one job.
     * </pre>
     */
    public dev.duetime.jobs.v1.GetJobResponse getJob(dev.duetime.jobs.v1.GetJobRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the team's jobs, newest first.
     * </pre>
     */
    public dev.duetime.jobs.v1.ListJobsResponse listJobs(dev.duetime.jobs.v1.ListJobsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListJobsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Changes the fields named in `update_mask`. A schedule change recomputes the next run time
     * from now (a schedule equal to the stored one is no change); runs already claimed keep the
     * definition they were claimed with. The answer says whether and how the next run moved.
     * With `validate_only`, nothing changes: the answer is the job as the update would leave it,
     * with its next occurrences before and after the change.
     * </pre>
     */
    public dev.duetime.jobs.v1.UpdateJobResponse updateJob(dev.duetime.jobs.v1.UpdateJobRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getUpdateJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Deletes a job. Queued runs are cancelled when a worker picks them up; a running attempt is
     * told to cancel. The run history stays readable through ListRuns/GetRun until retention.
     * </pre>
     */
    public dev.duetime.jobs.v1.DeleteJobResponse deleteJob(dev.duetime.jobs.v1.DeleteJobRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDeleteJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Pauses an active job: nothing runs; occurrences during the pause are recorded as SKIPPED
     * (JOB_PAUSED). The job keeps the pause's note and author (`Job.pause`) until it is resumed.
     * FAILED_PRECONDITION unless the job is ACTIVE.
     * </pre>
     */
    public dev.duetime.jobs.v1.PauseJobResponse pauseJob(dev.duetime.jobs.v1.PauseJobRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getPauseJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Resumes a paused job from now; occurrences during the pause are not caught up, unless
     * `catch_up` asks the job's misfire policy to decide. The answer says what became of the
     * occurrences the pause covered; with `validate_only`, what would, and nothing changes.
     * FAILED_PRECONDITION unless the job is PAUSED.
     * </pre>
     */
    public dev.duetime.jobs.v1.ResumeJobResponse resumeJob(dev.duetime.jobs.v1.ResumeJobRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getResumeJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Starts one run now, outside the schedule, whatever the job's state except deleted.
     * Idempotent by `request_id`: a retried call returns the same run.
     * </pre>
     */
    public dev.duetime.jobs.v1.TriggerJobResponse triggerJob(dev.duetime.jobs.v1.TriggerJobRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getTriggerJobMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists a job's runs, latest nominal time first.
     * </pre>
     */
    public dev.duetime.jobs.v1.ListRunsResponse listRuns(dev.duetime.jobs.v1.ListRunsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListRunsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns one run with its attempts.
     * </pre>
     */
    public dev.duetime.jobs.v1.GetRunResponse getRun(dev.duetime.jobs.v1.GetRunRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetRunMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Sends a DEAD_LETTERED run back to the queue with a fresh attempt budget; attempt numbers
     * keep rising. Idempotent by `request_id`. FAILED_PRECONDITION unless the run is
     * DEAD_LETTERED.
     * </pre>
     */
    public dev.duetime.jobs.v1.RedriveRunResponse redriveRun(dev.duetime.jobs.v1.RedriveRunRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRedriveRunMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Computes the next fire times of a schedule, or of a stored job, with the same code the
     * scheduler uses: shows what DST, jitter and the schedule will do before you commit.
     * </pre>
     */
    public dev.duetime.jobs.v1.PreviewScheduleResponse previewSchedule(dev.duetime.jobs.v1.PreviewScheduleRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getPreviewScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns the calling team's quota (the limits in force: its own, or the platform's
     * defaults) and what it uses of it now.
     * </pre>
     */
    public dev.duetime.jobs.v1.GetTeamQuotaResponse getTeamQuota(dev.duetime.jobs.v1.GetTeamQuotaRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetTeamQuotaMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Pauses many jobs at once, named or matched by a filter, as PauseJob does each. With
     * `validate_only`, only counts them. Each job's outcome is reported; one job's failure does
     * not stop the others.
     * </pre>
     */
    public dev.duetime.jobs.v1.BatchPauseJobsResponse batchPauseJobs(dev.duetime.jobs.v1.BatchPauseJobsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getBatchPauseJobsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Resumes many jobs at once, as ResumeJob does each; like BatchPauseJobs.
     * </pre>
     */
    public dev.duetime.jobs.v1.BatchResumeJobsResponse batchResumeJobs(dev.duetime.jobs.v1.BatchResumeJobsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getBatchResumeJobsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Answers why an occurrence of a job ran or did not: the fate of the occurrence at the time
     * asked, from the runs table's records (a range record stands for many occurrences) and the
     * schedule in force at that time (the job's version then, not today's). A time that is no
     * occurrence is answered with the nearest ones before and after; a wall-clock time in a DST
     * gap or fold is explained.
     * </pre>
     */
    public dev.duetime.jobs.v1.ExplainOccurrenceResponse explainOccurrence(dev.duetime.jobs.v1.ExplainOccurrenceRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getExplainOccurrenceMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists a job's versions, newest first: each change's time, author, call and the fields it
     * changed, with the definition it left (secret values redacted). A deleted job's history
     * stays readable.
     * </pre>
     */
    public dev.duetime.jobs.v1.ListJobVersionsResponse listJobVersions(dev.duetime.jobs.v1.ListJobVersionsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListJobVersionsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Redrives many DEAD_LETTERED runs at once, named or matched by a filter, as RedriveRun does
     * each. With `validate_only`, only counts them. Idempotent by `request_id`.
     * </pre>
     */
    public dev.duetime.jobs.v1.BatchRedriveRunsResponse batchRedriveRuns(dev.duetime.jobs.v1.BatchRedriveRunsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getBatchRedriveRunsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service JobService.
   * <pre>
   * Create, read, change and inspect jobs and their runs.
   * Every call must carry `authorization: Bearer &lt;team token&gt;` metadata; a team sees and changes
   * only its own jobs (another team's job is NOT_FOUND). Errors use the standard gRPC codes with a
   * `google.rpc.ErrorInfo` detail (domain `duetime.dev`, an UPPER_SNAKE reason) and, for bad
   * input, a `google.rpc.BadRequest` naming every bad field.
   * </pre>
   */
  public static final class JobServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<JobServiceFutureStub> {
    private JobServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected JobServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new JobServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates a job and computes its first run time. Idempotent by `request_id`: a repeated call
     * with the same id returns the job created the first time.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.CreateJobResponse> createJob(
        dev.duetime.jobs.v1.CreateJobRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCreateJobMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Returns one job.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.GetJobResponse> getJob(
        dev.duetime.jobs.v1.GetJobRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetJobMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists the team's jobs, newest first.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.ListJobsResponse> listJobs(
        dev.duetime.jobs.v1.ListJobsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListJobsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Changes the fields named in `update_mask`. A schedule change recomputes the next run time
     * from now (a schedule equal to the stored one is no change); runs already claimed keep the
     * definition they were claimed with. The answer says whether and how the next run moved.
     * With `validate_only`, nothing changes: the answer is the job as the update would leave it,
     * with its next occurrences before and after the change.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.UpdateJobResponse> updateJob(
        dev.duetime.jobs.v1.UpdateJobRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getUpdateJobMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Deletes a job. Queued runs are cancelled when a worker picks them up; a running attempt is
     * told to cancel. The run history stays readable through ListRuns/GetRun until retention.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.DeleteJobResponse> deleteJob(
        dev.duetime.jobs.v1.DeleteJobRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDeleteJobMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Pauses an active job: nothing runs; occurrences during the pause are recorded as SKIPPED
     * (JOB_PAUSED). The job keeps the pause's note and author (`Job.pause`) until it is resumed.
     * FAILED_PRECONDITION unless the job is ACTIVE.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.PauseJobResponse> pauseJob(
        dev.duetime.jobs.v1.PauseJobRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getPauseJobMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Resumes a paused job from now; occurrences during the pause are not caught up, unless
     * `catch_up` asks the job's misfire policy to decide. The answer says what became of the
     * occurrences the pause covered; with `validate_only`, what would, and nothing changes.
     * FAILED_PRECONDITION unless the job is PAUSED.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.ResumeJobResponse> resumeJob(
        dev.duetime.jobs.v1.ResumeJobRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getResumeJobMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Starts one run now, outside the schedule, whatever the job's state except deleted.
     * Idempotent by `request_id`: a retried call returns the same run.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.TriggerJobResponse> triggerJob(
        dev.duetime.jobs.v1.TriggerJobRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getTriggerJobMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists a job's runs, latest nominal time first.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.ListRunsResponse> listRuns(
        dev.duetime.jobs.v1.ListRunsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListRunsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Returns one run with its attempts.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.GetRunResponse> getRun(
        dev.duetime.jobs.v1.GetRunRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetRunMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Sends a DEAD_LETTERED run back to the queue with a fresh attempt budget; attempt numbers
     * keep rising. Idempotent by `request_id`. FAILED_PRECONDITION unless the run is
     * DEAD_LETTERED.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.RedriveRunResponse> redriveRun(
        dev.duetime.jobs.v1.RedriveRunRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRedriveRunMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Computes the next fire times of a schedule, or of a stored job, with the same code the
     * scheduler uses: shows what DST, jitter and the schedule will do before you commit.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.PreviewScheduleResponse> previewSchedule(
        dev.duetime.jobs.v1.PreviewScheduleRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getPreviewScheduleMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Returns the calling team's quota (the limits in force: its own, or the platform's
     * defaults) and what it uses of it now.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.GetTeamQuotaResponse> getTeamQuota(
        dev.duetime.jobs.v1.GetTeamQuotaRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetTeamQuotaMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Pauses many jobs at once, named or matched by a filter, as PauseJob does each. With
     * `validate_only`, only counts them. Each job's outcome is reported; one job's failure does
     * not stop the others.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.BatchPauseJobsResponse> batchPauseJobs(
        dev.duetime.jobs.v1.BatchPauseJobsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getBatchPauseJobsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Resumes many jobs at once, as ResumeJob does each; like BatchPauseJobs.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.BatchResumeJobsResponse> batchResumeJobs(
        dev.duetime.jobs.v1.BatchResumeJobsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getBatchResumeJobsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Answers why an occurrence of a job ran or did not: the fate of the occurrence at the time
     * asked, from the runs table's records (a range record stands for many occurrences) and the
     * schedule in force at that time (the job's version then, not today's). A time that is no
     * occurrence is answered with the nearest ones before and after; a wall-clock time in a DST
     * gap or fold is explained.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.ExplainOccurrenceResponse> explainOccurrence(
        dev.duetime.jobs.v1.ExplainOccurrenceRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getExplainOccurrenceMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists a job's versions, newest first: each change's time, author, call and the fields it
     * changed, with the definition it left (secret values redacted). A deleted job's history
     * stays readable.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.ListJobVersionsResponse> listJobVersions(
        dev.duetime.jobs.v1.ListJobVersionsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListJobVersionsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Redrives many DEAD_LETTERED runs at once, named or matched by a filter, as RedriveRun does
     * each. With `validate_only`, only counts them. Idempotent by `request_id`.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.duetime.jobs.v1.BatchRedriveRunsResponse> batchRedriveRuns(
        dev.duetime.jobs.v1.BatchRedriveRunsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getBatchRedriveRunsMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_CREATE_JOB = 0;
  private static final int METHODID_GET_JOB = 1;
  private static final int METHODID_LIST_JOBS = 2;
  private static final int METHODID_UPDATE_JOB = 3;
  private static final int METHODID_DELETE_JOB = 4;
  private static final int METHODID_PAUSE_JOB = 5;
  private static final int METHODID_RESUME_JOB = 6;
  private static final int METHODID_TRIGGER_JOB = 7;
  private static final int METHODID_LIST_RUNS = 8;
  private static final int METHODID_GET_RUN = 9;
  private static final int METHODID_REDRIVE_RUN = 10;
  private static final int METHODID_PREVIEW_SCHEDULE = 11;
  private static final int METHODID_GET_TEAM_QUOTA = 12;
  private static final int METHODID_BATCH_PAUSE_JOBS = 13;
  private static final int METHODID_BATCH_RESUME_JOBS = 14;
  private static final int METHODID_EXPLAIN_OCCURRENCE = 15;
  private static final int METHODID_LIST_JOB_VERSIONS = 16;
  private static final int METHODID_BATCH_REDRIVE_RUNS = 17;

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
        case METHODID_CREATE_JOB:
          serviceImpl.createJob((dev.duetime.jobs.v1.CreateJobRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.CreateJobResponse>) responseObserver);
          break;
        case METHODID_GET_JOB:
          serviceImpl.getJob((dev.duetime.jobs.v1.GetJobRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.GetJobResponse>) responseObserver);
          break;
        case METHODID_LIST_JOBS:
          serviceImpl.listJobs((dev.duetime.jobs.v1.ListJobsRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ListJobsResponse>) responseObserver);
          break;
        case METHODID_UPDATE_JOB:
          serviceImpl.updateJob((dev.duetime.jobs.v1.UpdateJobRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.UpdateJobResponse>) responseObserver);
          break;
        case METHODID_DELETE_JOB:
          serviceImpl.deleteJob((dev.duetime.jobs.v1.DeleteJobRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.DeleteJobResponse>) responseObserver);
          break;
        case METHODID_PAUSE_JOB:
          serviceImpl.pauseJob((dev.duetime.jobs.v1.PauseJobRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.PauseJobResponse>) responseObserver);
          break;
        case METHODID_RESUME_JOB:
          serviceImpl.resumeJob((dev.duetime.jobs.v1.ResumeJobRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ResumeJobResponse>) responseObserver);
          break;
        case METHODID_TRIGGER_JOB:
          serviceImpl.triggerJob((dev.duetime.jobs.v1.TriggerJobRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.TriggerJobResponse>) responseObserver);
          break;
        case METHODID_LIST_RUNS:
          serviceImpl.listRuns((dev.duetime.jobs.v1.ListRunsRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ListRunsResponse>) responseObserver);
          break;
        case METHODID_GET_RUN:
          serviceImpl.getRun((dev.duetime.jobs.v1.GetRunRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.GetRunResponse>) responseObserver);
          break;
        case METHODID_REDRIVE_RUN:
          serviceImpl.redriveRun((dev.duetime.jobs.v1.RedriveRunRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.RedriveRunResponse>) responseObserver);
          break;
        case METHODID_PREVIEW_SCHEDULE:
          serviceImpl.previewSchedule((dev.duetime.jobs.v1.PreviewScheduleRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.PreviewScheduleResponse>) responseObserver);
          break;
        case METHODID_GET_TEAM_QUOTA:
          serviceImpl.getTeamQuota((dev.duetime.jobs.v1.GetTeamQuotaRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.GetTeamQuotaResponse>) responseObserver);
          break;
        case METHODID_BATCH_PAUSE_JOBS:
          serviceImpl.batchPauseJobs((dev.duetime.jobs.v1.BatchPauseJobsRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.BatchPauseJobsResponse>) responseObserver);
          break;
        case METHODID_BATCH_RESUME_JOBS:
          serviceImpl.batchResumeJobs((dev.duetime.jobs.v1.BatchResumeJobsRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.BatchResumeJobsResponse>) responseObserver);
          break;
        case METHODID_EXPLAIN_OCCURRENCE:
          serviceImpl.explainOccurrence((dev.duetime.jobs.v1.ExplainOccurrenceRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ExplainOccurrenceResponse>) responseObserver);
          break;
        case METHODID_LIST_JOB_VERSIONS:
          serviceImpl.listJobVersions((dev.duetime.jobs.v1.ListJobVersionsRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.ListJobVersionsResponse>) responseObserver);
          break;
        case METHODID_BATCH_REDRIVE_RUNS:
          serviceImpl.batchRedriveRuns((dev.duetime.jobs.v1.BatchRedriveRunsRequest) request,
              (io.grpc.stub.StreamObserver<dev.duetime.jobs.v1.BatchRedriveRunsResponse>) responseObserver);
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
          getCreateJobMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.CreateJobRequest,
              dev.duetime.jobs.v1.CreateJobResponse>(
                service, METHODID_CREATE_JOB)))
        .addMethod(
          getGetJobMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.GetJobRequest,
              dev.duetime.jobs.v1.GetJobResponse>(
                service, METHODID_GET_JOB)))
        .addMethod(
          getListJobsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.ListJobsRequest,
              dev.duetime.jobs.v1.ListJobsResponse>(
                service, METHODID_LIST_JOBS)))
        .addMethod(
          getUpdateJobMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.UpdateJobRequest,
              dev.duetime.jobs.v1.UpdateJobResponse>(
                service, METHODID_UPDATE_JOB)))
        .addMethod(
          getDeleteJobMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.DeleteJobRequest,
              dev.duetime.jobs.v1.DeleteJobResponse>(
                service, METHODID_DELETE_JOB)))
        .addMethod(
          getPauseJobMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.PauseJobRequest,
              dev.duetime.jobs.v1.PauseJobResponse>(
                service, METHODID_PAUSE_JOB)))
        .addMethod(
          getResumeJobMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.ResumeJobRequest,
              dev.duetime.jobs.v1.ResumeJobResponse>(
                service, METHODID_RESUME_JOB)))
        .addMethod(
          getTriggerJobMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.TriggerJobRequest,
              dev.duetime.jobs.v1.TriggerJobResponse>(
                service, METHODID_TRIGGER_JOB)))
        .addMethod(
          getListRunsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.ListRunsRequest,
              dev.duetime.jobs.v1.ListRunsResponse>(
                service, METHODID_LIST_RUNS)))
        .addMethod(
          getGetRunMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.GetRunRequest,
              dev.duetime.jobs.v1.GetRunResponse>(
                service, METHODID_GET_RUN)))
        .addMethod(
          getRedriveRunMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.RedriveRunRequest,
              dev.duetime.jobs.v1.RedriveRunResponse>(
                service, METHODID_REDRIVE_RUN)))
        .addMethod(
          getPreviewScheduleMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.PreviewScheduleRequest,
              dev.duetime.jobs.v1.PreviewScheduleResponse>(
                service, METHODID_PREVIEW_SCHEDULE)))
        .addMethod(
          getGetTeamQuotaMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.GetTeamQuotaRequest,
              dev.duetime.jobs.v1.GetTeamQuotaResponse>(
                service, METHODID_GET_TEAM_QUOTA)))
        .addMethod(
          getBatchPauseJobsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.BatchPauseJobsRequest,
              dev.duetime.jobs.v1.BatchPauseJobsResponse>(
                service, METHODID_BATCH_PAUSE_JOBS)))
        .addMethod(
          getBatchResumeJobsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.BatchResumeJobsRequest,
              dev.duetime.jobs.v1.BatchResumeJobsResponse>(
                service, METHODID_BATCH_RESUME_JOBS)))
        .addMethod(
          getExplainOccurrenceMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.ExplainOccurrenceRequest,
              dev.duetime.jobs.v1.ExplainOccurrenceResponse>(
                service, METHODID_EXPLAIN_OCCURRENCE)))
        .addMethod(
          getListJobVersionsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.ListJobVersionsRequest,
              dev.duetime.jobs.v1.ListJobVersionsResponse>(
                service, METHODID_LIST_JOB_VERSIONS)))
        .addMethod(
          getBatchRedriveRunsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.duetime.jobs.v1.BatchRedriveRunsRequest,
              dev.duetime.jobs.v1.BatchRedriveRunsResponse>(
                service, METHODID_BATCH_REDRIVE_RUNS)))
        .build();
  }

  private static abstract class JobServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    JobServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.duetime.jobs.v1.JobServiceProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("JobService");
    }
  }

  private static final class JobServiceFileDescriptorSupplier
      extends JobServiceBaseDescriptorSupplier {
    JobServiceFileDescriptorSupplier() {}
  }

  private static final class JobServiceMethodDescriptorSupplier
      extends JobServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    JobServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (JobServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new JobServiceFileDescriptorSupplier())
              .addMethod(getCreateJobMethod())
              .addMethod(getGetJobMethod())
              .addMethod(getListJobsMethod())
              .addMethod(getUpdateJobMethod())
              .addMethod(getDeleteJobMethod())
              .addMethod(getPauseJobMethod())
              .addMethod(getResumeJobMethod())
              .addMethod(getTriggerJobMethod())
              .addMethod(getListRunsMethod())
              .addMethod(getGetRunMethod())
              .addMethod(getRedriveRunMethod())
              .addMethod(getPreviewScheduleMethod())
              .addMethod(getGetTeamQuotaMethod())
              .addMethod(getBatchPauseJobsMethod())
              .addMethod(getBatchResumeJobsMethod())
              .addMethod(getExplainOccurrenceMethod())
              .addMethod(getListJobVersionsMethod())
              .addMethod(getBatchRedriveRunsMethod())
              .build();
        }
      }
    }
    return result;
  }
}
