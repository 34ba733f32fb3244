-- One casing on the wire: question items say `multi_select`, not `multiSelect`. Rows written
-- before are rewritten here, so clients reading stored transcripts, live messages and the
-- journal see one shape. In compact JSON the text `"multiSelect":` can only be an object key
-- (a quote inside a string is escaped), so a plain replace is exact.
UPDATE chat_messages SET body = replace(body, '"multiSelect":', '"multi_select":')
WHERE body LIKE '%"multiSelect":%';
UPDATE chat_live SET body = replace(body, '"multiSelect":', '"multi_select":')
WHERE body LIKE '%"multiSelect":%';
UPDATE chat_events SET data = replace(data, '"multiSelect":', '"multi_select":')
WHERE data LIKE '%"multiSelect":%';
