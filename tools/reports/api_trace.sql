-- api_trace: every runtime API call in start order
SELECT start_ns - (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'base_ns') AS "Start (ns)",
       dur_ns AS "Duration (ns)",
       pid AS "Pid",
       tid AS "Tid",
       correlation AS "CorrId",
       error AS "Error",
       name AS "Name"
FROM api_calls
ORDER BY start_ns, id;
