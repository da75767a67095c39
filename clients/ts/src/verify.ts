// Checks that a call came from Duetime (docs/clients.md, "Verifying Duetime's calls").
// docs:begin ts-verify
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from "jose";
import { Webhook } from "standardwebhooks";

// A verifier for one team's calls: secret is its `whsec_...` secret, jwksUrl
// https://<gateway>/v1/teams/<team>/jwks.json (fetched, cached and fetched again on an
// unknown kid by jose), issuer the `iss` Duetime's workers name (DUETIME_SIGNING_ISSUER).
export function callVerifier(secret: string, jwksUrl: string, issuer: string) {
  const webhook = new Webhook(secret);
  const keys = createRemoteJWKSet(new URL(jwksUrl));
  // Checks one call (its exact body; its headers with lower-case names, as node:http gives
  // them) for the job's audience (its token_audience, by default its URL without query), as
  // of currentDate; returns the ID token's claims (sub: the job, duetime_run_key: the run,
  // duetime_attempt: the attempt). Throws when either check fails.
  return async (
    headers: Record<string, string>,
    body: Buffer,
    audience: string,
    currentDate: Date = new Date(),
  ): Promise<JWTPayload> => {
    // The body as it came, not parsed: it may be empty (a GET), text or JSON.
    webhook.verify(body, headers, { jsonParse: false });
    const token = headers["authorization"]?.match(/^Bearer (.+)$/)?.[1];
    if (!token) throw new Error("no ID token");
    const { payload } = await jwtVerify(token, keys, {
      algorithms: ["ES256"],
      issuer,
      audience,
      currentDate,
      clockTolerance: 30, // seconds the worker's clock and this one may disagree
      requiredClaims: ["exp", "sub"],
    });
    return payload;
  };
}
// docs:end ts-verify
