-- rank_sum: one row per trace (rank): its span, kernel, copy and API time, and how busy its devices were
WITH dev AS (SELECT start_ns, end_ns FROM kernels
             UNION ALL SELECT start_ns, end_ns FROM memops),
     ordered AS (SELECT start_ns, end_ns,
                        MAX(end_ns) OVER (ORDER BY start_ns, end_ns
                                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                            AS before_end
                 FROM dev),
     grouped AS (SELECT start_ns, end_ns,
                        SUM(CASE WHEN before_end IS NULL OR start_ns > before_end THEN 1 ELSE 0
                            END) OVER (ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS grp
                 FROM ordered),
     busy AS (SELECT MAX(end_ns) - MIN(start_ns) AS ns FROM grouped GROUP BY grp),
     span AS (SELECT MAX(end_ns) - MIN(start_ns) AS ns FROM slices WHERE ph = 'X')
SELECT (SELECT json_extract(value, '$.rank') FROM meta WHERE key = 'distributedInfo') AS "Rank",
       (SELECT ns FROM span) AS "Span (ns)",
       (SELECT COUNT(*) FROM kernels) AS "Kernels",
       (SELECT COALESCE(SUM(dur_ns), 0) FROM kernels) AS "Kernel Time (ns)",
       (SELECT COALESCE(SUM(dur_ns), 0) FROM memops) AS "Memory Time (ns)",
       (SELECT COALESCE(SUM(dur_ns), 0) FROM api_calls) AS "API Time (ns)",
       (SELECT COALESCE(SUM(ns), 0) FROM busy) AS "Device Busy (ns)",
       100.0 * (SELECT COALESCE(SUM(ns), 0) FROM busy) / NULLIF((SELECT ns FROM span), 0)
           AS "Device Busy (%)";
