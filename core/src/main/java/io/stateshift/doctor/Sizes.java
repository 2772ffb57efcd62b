package io.stateshift.doctor;

/** Sizes as the doctor and the fleet view write them: {@code 42.2 KiB}. */
public final class Sizes {
  private Sizes() {}

  /** Bytes in binary units with one decimal, plain bytes below 1 KiB. */
  public static String bytes(long bytes) {
    if (bytes < 1024) {
      return bytes + " B";
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB"};
    double value = bytes;
    int unit = -1;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit++;
    }
    return String.format("%.1f %s", value, units[unit]);
  }
}
