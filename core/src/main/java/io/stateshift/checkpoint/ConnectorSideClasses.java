package io.stateshift.checkpoint;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import org.apache.hadoop.fs.FileSystem;

/**
 * Classes of stateshift's that link against a connector's own libraries, defined in a class loader
 * next to the connector's. The command line loads a connector given with {@code --jars} in a loader
 * of its own, below the one that loaded stateshift, so a class of stateshift's cannot see the AWS
 * SDK that S3A brought; defined here, it sees the connector's classes through the connector's
 * loader and stateshift's through stateshift's, wherever each of the two came from.
 */
final class ConnectorSideClasses {
  // by name: a class literal would load it here, where the SDK may be out of sight
  private static final String S3_OBJECTS = "io.stateshift.checkpoint.S3ClientObjects";

  /** Per file-system class, the constructor of its {@link S3ClientObjects}. */
  private static final ClassValue<Constructor<?>> S3_CONSTRUCTORS =
      new ClassValue<>() {
        @Override
        protected Constructor<?> computeValue(Class<?> fileSystem) {
          try {
            ClassLoader loader = new NextToConnector(fileSystem.getClassLoader());
            return loader.loadClass(S3_OBJECTS).getConstructor(FileSystem.class);
          } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Cannot load " + S3_OBJECTS, e);
          }
        }
      };

  private ConnectorSideClasses() {}

  static S3Objects s3Objects(FileSystem fs) {
    try {
      return (S3Objects) S3_CONSTRUCTORS.get(fs.getClass()).newInstance(fs);
    } catch (InvocationTargetException e) {
      throw e.getCause() instanceof RuntimeException r
          ? r
          : new IllegalStateException("Cannot create " + S3_OBJECTS, e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("Cannot create " + S3_OBJECTS, e);
    }
  }

  /**
   * Defines the connector-side classes itself, from stateshift's class files; other names of
   * stateshift's come from stateshift's loader, everything else from the connector's.
   */
  private static final class NextToConnector extends ClassLoader {
    private static final ClassLoader STATESHIFT = ConnectorSideClasses.class.getClassLoader();

    NextToConnector(ClassLoader connector) {
      super("stateshift-next-to-connector", connector);
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (name.equals(S3_OBJECTS) || name.startsWith(S3_OBJECTS + "$")) {
        synchronized (getClassLoadingLock(name)) {
          Class<?> defined = findLoadedClass(name);
          return defined != null ? defined : define(name);
        }
      }
      if (name.startsWith("io.stateshift.")) {
        return STATESHIFT.loadClass(name);
      }
      return super.loadClass(name, resolve);
    }

    private Class<?> define(String name) throws ClassNotFoundException {
      String resource = name.replace('.', '/') + ".class";
      try (InputStream in = STATESHIFT.getResourceAsStream(resource)) {
        if (in == null) {
          throw new ClassNotFoundException(name);
        }
        byte[] bytes = in.readAllBytes();
        return defineClass(name, bytes, 0, bytes.length);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }
}
