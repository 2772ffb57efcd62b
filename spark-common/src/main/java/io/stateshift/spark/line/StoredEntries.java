package io.stateshift.spark.line;

import java.util.Iterator;
import java.util.NoSuchElementException;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;

/**
 * The entries of a RocksDB snapshot opened read-only, as stored, in key order: one reused entry
 * whose {@link #key} and {@link #value} are those of the last {@link #next}. Close it before the
 * database.
 */
public final class StoredEntries implements Iterator<StoredEntries>, AutoCloseable {
  private final ReadOptions options = new ReadOptions().setFillCache(false);
  private final RocksIterator it;
  public byte[] key;
  public byte[] value;

  public StoredEntries(RocksDB db) {
    this.it = db.newIterator(options);
    it.seekToFirst();
  }

  @Override
  public boolean hasNext() {
    if (it.isValid()) {
      return true;
    }
    try {
      it.status();
    } catch (RocksDBException e) {
      throw new IllegalStateException("Cannot read a RocksDB snapshot: " + e.getMessage(), e);
    }
    return false;
  }

  @Override
  public StoredEntries next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    key = it.key();
    value = it.value();
    it.next();
    return this;
  }

  @Override
  public void close() {
    it.close();
    options.close();
  }
}
