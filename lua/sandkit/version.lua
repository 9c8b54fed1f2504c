--- The sandkit version: the one place it is written. sandkit._VERSION,
-- `sandkit --version`, `make dist` and the release rockspec's name and
-- version follow it (spec/version_spec.lua checks they agree).
return "0.1.0"
