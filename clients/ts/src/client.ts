// How a TypeScript service calls Duetime's Job API with the code `npm run build` generates into
// gen/ (protoc-gen-es messages and service descriptors) over gRPC with Connect's Node transport:
// dialling over TLS with a team token, and reading the error details the API sends.
// client.test.ts drives a live API with it (see docs/clients.md).
import { readFileSync } from "node:fs";
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { JobService } from "../gen/duetime/jobs/v1/job_service_pb.js";
import { RunState, type Run } from "../gen/duetime/jobs/v1/run_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "../gen/google/rpc/error_details_pb.js";

// docs:begin ts-connect
export interface Connection {
  jobs: Client<typeof JobService>;
  close(): void;
}

// How a client reaches the API: over TLS, the API's certificate verified with the CA bundle in
// `caFile` (the system's roots when it is ""); without TLS only when `plaintext` is set.
export interface Transport {
  caFile: string;
  plaintext: boolean;
}

// The services' convention: DUETIME_TLS_CA_FILE names the CA bundle, and DUETIME_PLAINTEXT
// naming grpc (or all) means an API that serves no TLS.
export function transportFromEnv(): Transport {
  const named = (process.env.DUETIME_PLAINTEXT ?? "").split(",").map((n) => n.trim().toLowerCase());
  return {
    caFile: process.env.DUETIME_TLS_CA_FILE ?? "",
    plaintext: named.includes("grpc") || named.includes("all"),
  };
}

// Connects to the API at `address` ("host:port") as the team the token belongs to.
export function connect(address: string, token: string, transport: Transport): Connection {
  const bearer: Interceptor = (next) => (request) => {
    request.header.set("authorization", `Bearer ${token}`);
    return next(request);
  };
  const baseUrl = `${transport.plaintext ? "http" : "https"}://${address}`;
  const tls = transport.caFile ? { ca: readFileSync(transport.caFile) } : {};
  const sessionManager = new Http2SessionManager(baseUrl, undefined, tls);
  const grpc = createGrpcTransport({ baseUrl, sessionManager, interceptors: [bearer] });
  return { jobs: createClient(JobService, grpc), close: () => sessionManager.abort() };
}
// docs:end ts-connect

// docs:begin ts-errors
// The bad fields of an INVALID_ARGUMENT error (google.rpc.BadRequest), field path to description.
export function fieldViolations(error: unknown): Map<string, string> {
  const fields = new Map<string, string>();
  for (const bad of ConnectError.from(error).findDetails(BadRequestSchema)) {
    for (const violation of bad.fieldViolations) {
      fields.set(violation.field, violation.description);
    }
  }
  return fields;
}

// The google.rpc.ErrorInfo reason of an error (e.g. ETAG_MISMATCH), or "".
export function reason(error: unknown): string {
  const infos = ConnectError.from(error).findDetails(ErrorInfoSchema);
  return infos.find((info) => info.domain === "duetime.dev")?.reason ?? "";
}

// The gRPC code of an error (Code.InvalidArgument, Code.Aborted, ...).
export function code(error: unknown): Code {
  return ConnectError.from(error).code;
}
// docs:end ts-errors

const FINAL = new Set([
  RunState.SUCCEEDED,
  RunState.DEAD_LETTERED,
  RunState.MISSED,
  RunState.SKIPPED,
  RunState.CANCELLED,
]);

// docs:begin ts-wait
// Polls a run until it reaches a final state, or throws once `timeoutMs` has passed.
export async function waitForRun(
  jobs: Client<typeof JobService>,
  name: string,
  timeoutMs: number,
): Promise<Run> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { run } = await jobs.getRun({ name });
    if (run !== undefined && FINAL.has(run.state)) {
      return run;
    }
    if (Date.now() > deadline) {
      throw new Error(`run ${name} still ${RunState[run?.state ?? 0]} after ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
// docs:end ts-wait
