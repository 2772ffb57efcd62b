package io.stateshift.spark.state;

import java.util.ArrayList;
import java.util.List;
import java.util.ListIterator;
import scala.Option;
import scala.collection.immutable.Seq;

/**
 * The few conversions Java needs to call Spark's Scala APIs; kept here so the rest reads as Java.
 * Written with what Scala 2.12 and 2.13 both have, undeprecated (a list built by {@code ::}, a map
 * by {@code updated}, iterators walked by hand): {@code scala.jdk.javaapi.CollectionConverters} is
 * 2.13's only, {@code scala.collection.JavaConverters} deprecated there.
 */
public final class ScalaBridge {
  private ScalaBridge() {}

  public static <T> Seq<T> seq(List<T> list) {
    return list(list);
  }

  public static <T> scala.collection.immutable.List<T> list(List<T> list) {
    scala.collection.immutable.List<T> out = scala.collection.immutable.List$.MODULE$.empty();
    for (ListIterator<T> it = list.listIterator(list.size()); it.hasPrevious(); ) {
      out = out.$colon$colon(it.previous());
    }
    return out;
  }

  /**
   * A Scala list typed as the call takes it, where the element type holds a Scala sequence (pairs
   * of {@code makeRDD} with preferred locations): Spark's {@code Seq} is {@code
   * scala.collection.Seq} on 2.12 and {@code scala.collection.immutable.Seq} on 2.13, which no Java
   * type names for both; the list is one of both.
   */
  @SuppressWarnings("unchecked")
  public static <S> S untypedSeq(List<?> elements) {
    return (S) list(elements);
  }

  static <T> Option<T> none() {
    return Option.empty();
  }

  @SuppressWarnings("unchecked") // 2.13's updated returns its collection type, raw to Java
  public static <K, V> scala.collection.immutable.Map<K, V> immutableMap(java.util.Map<K, V> map) {
    scala.collection.immutable.Map<K, V> out = emptyMap();
    for (java.util.Map.Entry<K, V> e : map.entrySet()) {
      out = out.updated(e.getKey(), e.getValue());
    }
    return out;
  }

  public static <K, V> scala.collection.immutable.Map<K, V> emptyMap() {
    return scala.collection.immutable.Map$.MODULE$.empty();
  }

  public static <T> List<T> javaList(scala.collection.Iterable<T> iterable) {
    return javaList(iterable.iterator());
  }

  public static <T> List<T> javaList(scala.collection.Iterator<T> iterator) {
    List<T> out = new ArrayList<>();
    while (iterator.hasNext()) {
      out.add(iterator.next());
    }
    return out;
  }

  /** A Scala map as a Java map, in the map's own order. */
  public static <K, V> java.util.Map<K, V> javaMap(scala.collection.Map<K, V> map) {
    java.util.Map<K, V> out = new java.util.LinkedHashMap<>();
    for (scala.collection.Iterator<scala.Tuple2<K, V>> it = map.iterator(); it.hasNext(); ) {
      scala.Tuple2<K, V> kv = it.next();
      out.put(kv._1(), kv._2());
    }
    return out;
  }

  /** A Java iterator as a Scala one, read lazily. */
  public static <T> scala.collection.Iterator<T> scalaIterator(java.util.Iterator<T> iterator) {
    return new scala.collection.AbstractIterator<T>() {
      @Override
      public boolean hasNext() {
        return iterator.hasNext();
      }

      @Override
      public T next() {
        return iterator.next();
      }
    };
  }

  /** A Scala iterator as a Java one, read lazily. */
  public static <T> java.util.Iterator<T> javaIterator(scala.collection.Iterator<T> iterator) {
    return new java.util.Iterator<T>() {
      @Override
      public boolean hasNext() {
        return iterator.hasNext();
      }

      @Override
      public T next() {
        return iterator.next();
      }
    };
  }
}
