-- mem_time_sum: device copies and fills by operation: share of their time and the distribution of durations
SELECT 100.0 * SUM(dur_ns) / (SELECT SUM(dur_ns) FROM memops) AS "Time (%)",
       SUM(dur_ns) AS "Total Time (ns)",
       COUNT(*) AS "Count",
       AVG(dur_ns) AS "Avg (ns)",
       median(dur_ns) AS "Med (ns)",
       MIN(dur_ns) AS "Min (ns)",
       MAX(dur_ns) AS "Max (ns)",
       stdev(dur_ns) AS "StdDev (ns)",
       name AS "Operation"
FROM memops
GROUP BY name
ORDER BY "Total Time (ns)" DESC, "Operation";
