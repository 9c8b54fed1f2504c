// The SDK proof (sdk.test.mjs) again, against the server under
// --isolation bwrap: both ways of building a sandbox's view must behave the
// same for the SDK.
process.env.MODAL_TEST_ISOLATION = 'bwrap';
await import('./sdk.test.mjs');
