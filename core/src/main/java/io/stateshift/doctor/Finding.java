package io.stateshift.doctor;

/**
 * One thing the doctor found.
 *
 * @param severity how much it matters
 * @param code a stable identifier for machines, for example {@code STATE_GROWTH}
 * @param title one line saying what is wrong
 * @param evidence the numbers the finding rests on
 * @param fix what to do about it, with the exact setting or command where there is one
 */
public record Finding(Severity severity, String code, String title, String evidence, String fix) {}
