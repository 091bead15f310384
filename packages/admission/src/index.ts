/**
 * @gateway/admission owns what is decided before a model job exists, for a live request and a
 * batch line alike: who the caller is with its limits (`KeyHolder`), its requests per minute,
 * its hold on quota and in-flight slots, and its place in the fair queue (`ModelAdmission`).
 */
export { callerOf, cappedForBudget, holderOf, keyRecordOf, keyRefusal, mayUseModel, type KeyHolder, type KeyRecord } from './key-holder.ts';
export { KeyRateLimit } from './key-rate-limit.ts';
export { ModelAdmission, priorityOf, type Admission, type ModelAdmissionOptions, type BacklogGate } from './model-admission.ts';
export { UserBodyBudget } from './user-body-budget.ts';
