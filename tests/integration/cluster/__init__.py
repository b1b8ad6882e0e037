"""The cluster suite is a package so that its ``scope="package"`` cluster stops when the folder is done
(in a plain folder pytest would keep the four JVMs running until the end of the whole session)."""
