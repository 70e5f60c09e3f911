/** The CSS colour keywords of the `color-name` package: name → [red, green, blue]. */
declare module 'color-name' {
  const colours: Readonly<Record<string, readonly [number, number, number]>>;
  export default colours;
}
