-- cl_leaks: OpenCL objects never released, by kind (the trace's opencl_leaks)
SELECT j.key AS "Object",
       json_extract(j.value, '$.count') AS "Count",
       json_extract(j.value, '$.bytes') AS "Bytes"
FROM meta, json_each(meta.value) AS j
WHERE meta.key = 'opencl_leaks' AND j.key <> 'total' AND json_extract(j.value, '$.count') > 0
ORDER BY "Count" DESC, "Object";
