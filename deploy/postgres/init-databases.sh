#!/usr/bin/env bash
# Creates the results database and its owner beside Dagster's storage database.
# The postgres image runs this once, on an empty data volume, as the superuser
# ($POSTGRES_USER, which is Dagster's user: it owns $POSTGRES_DB). The results role gets
# no superuser rights: the benchmark code reaches only its own database.
# psql variables (:'x', :"x") quote the names and password, so no value is spliced into SQL.
set -euo pipefail
: "${INFERX_RESULTS_DB:?}" "${INFERX_RESULTS_DB_USER:?}" "${INFERX_RESULTS_DB_PASSWORD:?}"

psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v results_db="$INFERX_RESULTS_DB" \
  -v results_user="$INFERX_RESULTS_DB_USER" \
  -v results_password="$INFERX_RESULTS_DB_PASSWORD" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'results_user')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'results_user') \gexec
ALTER ROLE :"results_user" WITH LOGIN PASSWORD :'results_password';
SELECT format('CREATE DATABASE %I OWNER %I', :'results_db', :'results_user')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'results_db') \gexec
REVOKE ALL ON DATABASE :"results_db" FROM PUBLIC;
GRANT ALL ON DATABASE :"results_db" TO :"results_user";
SQL
