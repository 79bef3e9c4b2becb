-- api_sum: runtime API calls by name: share of API time, count and the distribution of durations
SELECT 100.0 * SUM(dur_ns) / (SELECT SUM(dur_ns) FROM api_calls) AS "Time (%)",
       SUM(dur_ns) AS "Total Time (ns)",
       COUNT(*) AS "Num Calls",
       AVG(dur_ns) AS "Avg (ns)",
       median(dur_ns) AS "Med (ns)",
       MIN(dur_ns) AS "Min (ns)",
       MAX(dur_ns) AS "Max (ns)",
       stdev(dur_ns) AS "StdDev (ns)",
       name AS "Name"
FROM api_calls
GROUP BY name
ORDER BY "Total Time (ns)" DESC, "Name";
