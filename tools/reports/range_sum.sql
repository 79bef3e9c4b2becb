-- range_sum: annotated ranges and torch ops by name: share of range time and the distribution of durations
SELECT 100.0 * SUM(dur_ns) / (SELECT SUM(dur_ns) FROM ranges) AS "Time (%)",
       SUM(dur_ns) AS "Total Time (ns)",
       COUNT(*) AS "Instances",
       AVG(dur_ns) AS "Avg (ns)",
       median(dur_ns) AS "Med (ns)",
       MIN(dur_ns) AS "Min (ns)",
       MAX(dur_ns) AS "Max (ns)",
       stdev(dur_ns) AS "StdDev (ns)",
       name AS "Range"
FROM ranges
GROUP BY name
ORDER BY "Total Time (ns)" DESC, "Range";
