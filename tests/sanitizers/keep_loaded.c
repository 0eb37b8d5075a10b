/* For AddressSanitizer runs only (scripts/test.sh --sanitize=address preloads it): makes
 * dlclose() keep every library loaded. The Vulkan loader unloads Mesa's drivers (lavapipe,
 * LLVM) at vkDestroyInstance; LeakSanitizer then no longer sees the driver's globals that
 * still point at its allocations and reports them as leaks from "<unknown module>", with no
 * stack to tell them from PCP's own. With the drivers kept, those blocks stay reachable and
 * any real leak is still reported, with its stack. */
int dlclose(void* handle) {
  (void)handle;
  return 0;
}
