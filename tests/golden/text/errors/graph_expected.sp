model m {
}
