-- kern_trace: every kernel in start order, with the call that launched it
SELECT k.start_ns - (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'base_ns') AS "Start (ns)",
       k.dur_ns AS "Duration (ns)",
       k.device AS "Device",
       k.queue AS "Queue",
       k.correlation AS "CorrId",
       a.name AS "Launch",
       k.global_size AS "Global Size",
       k.local_size AS "Local Size",
       k.name AS "Name"
FROM kernels k
LEFT JOIN api_calls a ON a.correlation = k.correlation
ORDER BY k.start_ns, k.id;
