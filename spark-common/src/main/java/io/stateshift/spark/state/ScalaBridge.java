package io.stateshift.spark.state;

import java.util.List;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The few conversions Java needs to call Spark's Scala APIs; kept here so the rest reads as Java.
 */
public final class ScalaBridge {
  private ScalaBridge() {}

  public static <T> Seq<T> seq(List<T> list) {
    return CollectionConverters.asScala(list).toSeq();
  }

  static <T> scala.collection.immutable.List<T> list(List<T> list) {
    return CollectionConverters.asScala(list).toList();
  }

  static <T> Option<T> none() {
    return Option.empty();
  }

  static <K, V> scala.collection.immutable.Map<K, V> immutableMap(java.util.Map<K, V> map) {
    return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(map));
  }

  static <K, V> scala.collection.immutable.Map<K, V> emptyMap() {
    return scala.collection.immutable.Map$.MODULE$.empty();
  }

  public static <T> List<T> javaList(scala.collection.Iterable<T> iterable) {
    return new java.util.ArrayList<>(CollectionConverters.asJavaCollection(iterable));
  }
}
