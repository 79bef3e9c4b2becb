-- cl_errors: failed runtime calls and commands by call and error
SELECT COUNT(*) AS "Count",
       name AS "Call",
       error AS "Error"
FROM api_calls
WHERE error IS NOT NULL AND error <> ''
GROUP BY name, error
ORDER BY "Count" DESC, "Call";
