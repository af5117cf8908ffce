-- 0003: a used ticket remembers which connection consumed it. An attach that
-- consumed its ticket on a grain that then moved is retried by the same
-- connection on the new owner; that retry must succeed, while any other use
-- of the ticket stays refused. Tickets used before this migration have no
-- consumer and match nobody.
ALTER TABLE used_tickets ADD COLUMN consumer text NOT NULL DEFAULT '';
