-- mem_sum: device copies and fills by operation: count, bytes, time and bandwidth
SELECT COUNT(*) AS "Count",
       SUM(bytes) AS "Total (B)",
       AVG(bytes) AS "Avg (B)",
       MIN(bytes) AS "Min (B)",
       MAX(bytes) AS "Max (B)",
       SUM(dur_ns) AS "Total Time (ns)",
       CASE WHEN SUM(dur_ns) > 0 THEN 1.0 * SUM(bytes) / SUM(dur_ns) END AS "Bandwidth (GB/s)",
       kind AS "Kind",
       name AS "Operation"
FROM memops
GROUP BY kind, name
ORDER BY "Total (B)" DESC, "Operation";
