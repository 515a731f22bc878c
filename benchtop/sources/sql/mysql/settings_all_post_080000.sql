-- Every global variable that differs from the compiled-in default.
SELECT g.VARIABLE_NAME, g.VARIABLE_VALUE, i.VARIABLE_SOURCE
FROM performance_schema.global_variables g
JOIN performance_schema.variables_info i USING (VARIABLE_NAME)
WHERE i.VARIABLE_SOURCE <> 'COMPILED'
