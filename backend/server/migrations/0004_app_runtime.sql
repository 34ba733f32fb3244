-- The app runtime each bundle was built with (a hash of the runtime files the bundler
-- inlines). At start-up, a live app built with another runtime is rebuilt from its live
-- commit, so a platform update reaches apps the agent built before it.
ALTER TABLE apps ADD COLUMN runtime_sha TEXT;
