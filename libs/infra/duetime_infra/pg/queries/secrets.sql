-- Re-sealing stored secrets under the current key (duetime-ops secrets rotate).
-- Pages in primary-key order, each row changed by a compare-and-set on its document, so a
-- concurrent write wins and is read again; no lock is held between statements.

-- name: secrets_jobs_page
-- Jobs after $1 whose definition holds a header or env value in clear, or sealed under
-- another key than $2.
SELECT job_id, spec FROM jobs
WHERE job_id > $1
  AND (jsonb_path_exists(
         spec,
         '$.target.headers.* ? (@.type() == "string" || @.key_id != $key)',
         jsonb_build_object('key', $2::text))
       OR jsonb_path_exists(
         spec,
         '$.target.env.* ? (@.type() == "string" || @.key_id != $key)',
         jsonb_build_object('key', $2::text)))
ORDER BY job_id
LIMIT $3;

-- name: secrets_job_get
SELECT job_id, spec FROM jobs WHERE job_id = $1;

-- name: secrets_job_swap
UPDATE jobs SET spec = $3 WHERE job_id = $1 AND spec = $2 RETURNING job_id;

-- name: secrets_versions_page
-- job_versions rows after ($1, $2) to re-seal, as secrets_jobs_page.
SELECT job_id, version, spec FROM job_versions
WHERE (job_id, version) > ($1, $2)
  AND (jsonb_path_exists(
         spec,
         '$.target.headers.* ? (@.type() == "string" || @.key_id != $key)',
         jsonb_build_object('key', $3::text))
       OR jsonb_path_exists(
         spec,
         '$.target.env.* ? (@.type() == "string" || @.key_id != $key)',
         jsonb_build_object('key', $3::text)))
ORDER BY job_id, version
LIMIT $4;

-- name: secrets_version_get
SELECT job_id, version, spec FROM job_versions WHERE job_id = $1 AND version = $2;

-- name: secrets_version_swap
UPDATE job_versions SET spec = $4 WHERE job_id = $1 AND version = $2 AND spec = $3
RETURNING job_id;
