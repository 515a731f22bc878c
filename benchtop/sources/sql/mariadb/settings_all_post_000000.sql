-- Every global variable that differs from the compiled-in default (set in a
-- config file, on the command line, by SET GLOBAL or sized automatically).
SELECT VARIABLE_NAME, GLOBAL_VALUE, GLOBAL_VALUE_ORIGIN
FROM information_schema.SYSTEM_VARIABLES
WHERE GLOBAL_VALUE_ORIGIN <> 'COMPILE-TIME' AND VARIABLE_SCOPE <> 'SESSION ONLY'
