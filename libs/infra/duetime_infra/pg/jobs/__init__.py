"""The jobs aggregate: writing a job and its versions, and reading jobs and runs."""
