-- cl_builds: program builds (clBuildProgram, clCompileProgram, clLinkProgram): count and time
SELECT COUNT(*) AS "Count",
       SUM(dur_ns) AS "Total Time (ns)",
       AVG(dur_ns) AS "Avg (ns)",
       MAX(dur_ns) AS "Max (ns)",
       name AS "Call"
FROM api_calls
WHERE name IN ('clBuildProgram', 'clCompileProgram', 'clLinkProgram')
GROUP BY name
ORDER BY "Total Time (ns)" DESC;
