-- The straggler table of `prof report` ("Steps across ranks"; docs/FORMATS.md, "Ranks")
-- computed from the events of `prof export --format parquet`, for DuckDB (other engines:
-- the same joins; first(x ORDER BY ...) is DuckDB's arg-min with ties broken by rank).
-- Needs a view `events` over the exports, one or many:
--   CREATE VIEW events AS SELECT * FROM read_parquet('job.parquet/events.parquet');
--   CREATE VIEW events AS SELECT * FROM read_parquet('ranks/*.parquet/events.parquet');
-- (ranks exported one by one are on one clock only when they ran on one host: export a
-- job's captures together to put other hosts on the first one's clock.)
-- Per step: the rank with the most compute (the step's time out of collectives), its
-- compute, the median compute, the rank that waited longest in collectives (from its
-- arrival to the last rank's) and that wait. The same rules as prof's, but: a rank's
-- leading calls of a collective with no partner (cut by a window, a late start) are not
-- set aside first; a process's images before and after an exec are one process here; and
-- where prof gives no table (no collectives, fewer than two ranks) this gives steps.
WITH
rank_events AS (SELECT * FROM events WHERE rank IS NOT NULL),
-- one process per rank: the one with the most collectives (its workers share its rank)
proc AS (
  SELECT rank, capture, pid,
         count(*) FILTER (WHERE category = 'collective' AND type = 'X') AS n
  FROM rank_events GROUP BY rank, capture, pid),
chosen AS (
  SELECT rank, capture, pid FROM (
    SELECT *, row_number() OVER (PARTITION BY rank ORDER BY n DESC, capture, pid) AS r
    FROM proc) WHERE r = 1),
ev AS (SELECT e.* FROM rank_events e JOIN chosen USING (rank, capture, pid)),
nranks AS (SELECT count(*) AS n FROM chosen),
-- the k-th call of a collective on every rank is one collective
coll AS (
  SELECT rank, name, start_ns AS t0, start_ns + dur_ns AS t1,
         row_number() OVER (PARTITION BY rank, name ORDER BY start_ns) AS k
  FROM ev WHERE category = 'collective' AND type = 'X'),
arrivals AS (SELECT name, k, max(t0) AS last, count(*) AS ranks FROM coll GROUP BY name, k),
waited AS (
  SELECT c.rank, c.t0, least(a.last - c.t0, c.t1 - c.t0) AS wait
  FROM coll c JOIN arrivals a USING (name, k), nranks WHERE a.ranks = nranks.n),
-- step boundaries: step marks, else ProfilerStep#N starts, else Optimizer.step ends (of
-- the optimizer called most on the rank), the first kind every rank has two of
bound AS (
  SELECT rank, 1 AS kind, start_ns AS t, name FROM ev WHERE type = 'i' AND category = 'step'
  UNION ALL
  SELECT rank, 2, start_ns, name FROM ev
  WHERE type = 'X' AND category = 'user' AND starts_with(name, 'ProfilerStep')
    AND length(name) > 12
  UNION ALL
  SELECT rank, 3, start_ns + dur_ns, name FROM ev
  WHERE type = 'X' AND category = 'user' AND starts_with(name, 'Optimizer.step#')
    AND length(name) > 15),
optimizer AS (
  SELECT rank, name FROM (
    SELECT rank, name,
           row_number() OVER (PARTITION BY rank ORDER BY count(*) DESC, name) AS r
    FROM bound WHERE kind = 3 GROUP BY rank, name) WHERE r = 1),
bounds AS (
  SELECT b.rank, b.kind, b.t FROM bound b
  LEFT JOIN optimizer o ON b.kind = 3 AND o.rank = b.rank AND o.name = b.name
  WHERE b.kind < 3 OR o.rank IS NOT NULL),
counts AS (
  SELECT c.rank, k.kind, count(b.t) AS n
  FROM chosen c CROSS JOIN (VALUES (1), (2), (3)) k(kind)
  LEFT JOIN bounds b ON b.rank = c.rank AND b.kind = k.kind
  GROUP BY c.rank, k.kind),
kind AS (
  SELECT min(kind) AS kind FROM (SELECT kind, min(n) AS fewest FROM counts GROUP BY kind)
  WHERE fewest >= 2),
nsteps AS (SELECT min(n) - 1 AS n FROM counts JOIN kind USING (kind)),
steps AS (
  SELECT rank, j AS step, t AS t0, next_t AS t1 FROM (
    SELECT b.rank, b.t, lead(b.t) OVER (PARTITION BY b.rank ORDER BY b.t) AS next_t,
           row_number() OVER (PARTITION BY b.rank ORDER BY b.t) AS j
    FROM bounds b JOIN kind USING (kind)), nsteps
  WHERE j <= nsteps.n),
-- a collective belongs to the step its start lies in
per_step AS (
  SELECT s.rank, s.step,
         greatest(s.t1 - s.t0 - coalesce(
           (SELECT sum(greatest(c.t1 - c.t0, 0)) FROM coll c
            WHERE c.rank = s.rank AND c.t0 >= s.t0 AND c.t0 < s.t1), 0), 0) AS compute,
         coalesce((SELECT sum(w.wait) FROM waited w
                   WHERE w.rank = s.rank AND w.t0 >= s.t0 AND w.t0 < s.t1), 0) AS wait
  FROM steps s)
SELECT step,
       first(rank ORDER BY compute DESC, rank) AS slowest_rank,
       max(compute) AS slowest_compute_ns,
       CAST(floor(quantile_cont(compute, 0.5)) AS BIGINT) AS median_compute_ns,
       first(rank ORDER BY wait DESC, rank) AS most_waiting_rank,
       max(wait) AS most_wait_ns
FROM per_step GROUP BY step ORDER BY step;
